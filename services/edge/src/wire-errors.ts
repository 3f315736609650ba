/** The error shape of a wire, apart from the rest of it: read by the key check and the error handler. */
import type { FastifyRequest } from 'fastify';
import type { RequestError } from './errors.js';

/** The error shape of a wire: what the edge's error handler sends on the wire's route. */
export interface WireErrors {
  /** The body of an error response (or of a stream's last event). */
  renderError(error: RequestError): string;
  /** Reads the caller's key from the request's headers (a 401 when there is none); absent: the bearer token. */
  readKey?(request: FastifyRequest): string;
}
