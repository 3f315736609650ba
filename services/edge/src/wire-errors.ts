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

declare module 'fastify' {
  /** What the edge's routes set in their `config` (the multipart parser adds its own beside them). */
  interface FastifyContextConfig {
    /** The route's error shape and key reader (auth/key-check.ts's routeWire): a wire, or a function that picks one per request. */
    wire?: WireErrors | ((request: FastifyRequest) => WireErrors | undefined);
    /** A 405 answer to the other methods of an API path: no endpoint (app.ts's registeredRoutes leaves it out). */
    methodNotAllowed?: boolean;
  }
}
