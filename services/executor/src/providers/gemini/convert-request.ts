/**
 * Message conversion: a validated gateway ChatRequest (OpenAI-shaped, proto-loader output) ->
 * the body of Gemini's generateContent / streamGenerateContent.
 *
 * - system and developer messages become `systemInstruction`; the other roles become `user` and
 *   `model` contents, consecutive contents of one role merged into one;
 * - images: data URLs -> `inlineData`; http(s) URLs -> `fileData` with the media type guessed from
 *   the file extension (INVALID_ARGUMENT when there is none to guess from); audio -> `inlineData`;
 * - assistant tool_calls -> `functionCall` parts (arguments parsed to objects, INVALID_ARGUMENT
 *   when they are not a JSON object); tool messages -> `functionResponse` parts, whose function
 *   name Gemini requires and OpenAI does not send: it is found from the assistant tool call the
 *   message answers (tool_call_id);
 * - tools -> one `functionDeclarations` tool, parameters converted to Gemini's schema subset;
 *   tool_choice -> functionCallingConfig AUTO / ANY / NONE (a named function: ANY restricted to it);
 * - generationConfig: temperature, topP, maxOutputTokens, stopSequences, candidateCount (n),
 *   penalties, seed; JSON response formats -> responseMimeType application/json, plus
 *   responseSchema when the json_schema is expressible in the subset (else the mime type alone).
 */
import type { CatalogModel } from '@gateway/catalog';
import type { ChatRequestOutput, ContentPartOutput, MessageOutput } from '@gateway/proto';
import { invalidRequest, notAUrl, unknownRole, parseArgumentsObject, parseDataUrl, parseJsonField } from '../parse-json-field.js';
import { toGeminiSchema, UnconvertibleSchemaError } from './to-gemini-schema.js';
import type { GeminiContent, GeminiFunctionDeclaration, GeminiPart, GeminiRequest } from './wire-types.js';
import { GEMINI_PROVIDER } from '../provider-names.js';
import { ProviderRefusal } from '../provider-refusal.js';

/** Media types by file extension, for http(s) image URLs (Gemini's fileData needs one). */
const MEDIA_TYPES: Readonly<Record<string, string>> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  heic: 'image/heic',
  heif: 'image/heif',
  pdf: 'application/pdf',
};

/** Media types of OpenAI's input_audio formats. */
const AUDIO_TYPES: Readonly<Record<string, string>> = { wav: 'audio/wav', mp3: 'audio/mp3' };

function imagePart(url: string, param: string): GeminiPart {
  const data = parseDataUrl(url);
  if (data) return { inlineData: { mimeType: data.mediaType, data: data.data } };
  if (/^https?:\/\//i.test(url)) {
    const extension = /\.([a-z0-9]+)$/i.exec(new URL(url).pathname)?.[1]?.toLowerCase();
    const mimeType = extension ? MEDIA_TYPES[extension] : undefined;
    if (!mimeType) {
      throw new ProviderRefusal(
        GEMINI_PROVIDER,
        `needs the image type of ${param}: use a URL ending in .png, .jpg, .jpeg, .webp, .gif, .heic or .heif, or a base64 data URL.`,
        { param, reason: 'unsupported_parameter' },
      );
    }
    return { fileData: { mimeType, fileUri: url } };
  }
  throw notAUrl(param);
}

function convertPart(part: ContentPartOutput, param: string): GeminiPart | undefined {
  if (part.text !== undefined) return part.text === '' ? undefined : { text: part.text };
  if (part.image_url) return imagePart(part.image_url.url ?? '', `${param}.image_url.url`);
  if (part.input_audio) {
    const mimeType = AUDIO_TYPES[part.input_audio.format ?? ''];
    if (!mimeType) throw invalidRequest('input_audio.format must be wav or mp3.', `${param}.input_audio.format`);
    return { inlineData: { mimeType, data: part.input_audio.data ?? '' } };
  }
  if (part.file) {
    const data = part.file.file_data ? parseDataUrl(part.file.file_data) : undefined;
    if (data) return { inlineData: { mimeType: data.mediaType, data: data.data } };
    throw new ProviderRefusal(GEMINI_PROVIDER, 'accepts files only as base64 data URLs (file_data); file ids are not supported.', {
      param: `${param}.file`,
      reason: 'unsupported_parameter',
    });
  }
  return undefined;
}

function contentParts(message: MessageOutput, position: number): GeminiPart[] {
  if (message.content === 'parts' || message.parts) {
    return (message.parts?.parts ?? []).flatMap((part, index) => convertPart(part, `messages[${position}].content[${index}]`) ?? []);
  }
  return typeof message.text === 'string' && message.text !== '' ? [{ text: message.text }] : [];
}

/** A tool message's text as the object functionResponse.response must be. */
function responseObject(message: MessageOutput): Record<string, unknown> {
  const text =
    message.content === 'parts' || message.parts
      ? (message.parts?.parts ?? []).flatMap((part) => (part.text === undefined ? [] : [part.text])).join('')
      : (message.text ?? '');
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
    return { content: parsed };
  } catch {
    return { content: text };
  }
}

function convertContents(request: ChatRequestOutput): { contents: GeminiContent[]; system: GeminiPart[] } {
  const names = new Map<string, string>();
  const contents: GeminiContent[] = [];
  const system: GeminiPart[] = [];
  const append = (role: 'user' | 'model', parts: GeminiPart[]) => {
    if (parts.length === 0) return;
    const last = contents.at(-1);
    if (last?.role === role) last.parts.push(...parts);
    else contents.push({ role, parts: [...parts] });
  };
  (request.messages ?? []).forEach((message, position) => {
    switch (message.role) {
      case 'ROLE_SYSTEM':
      case 'ROLE_DEVELOPER':
        system.push(...contentParts(message, position).filter((part) => part.text !== undefined));
        return;
      case 'ROLE_USER':
        append('user', contentParts(message, position));
        return;
      case 'ROLE_ASSISTANT': {
        const parts = contentParts(message, position);
        (message.tool_calls ?? []).forEach((call, index) => {
          const name = call.function?.name ?? '';
          if (call.id) names.set(call.id, name);
          parts.push({
            functionCall: { name, args: parseArgumentsObject(call.function?.arguments ?? '', `messages[${position}].tool_calls[${index}].function.arguments`) },
          });
        });
        append('model', parts);
        return;
      }
      case 'ROLE_TOOL': {
        const name = message.tool_call_id === undefined ? undefined : names.get(message.tool_call_id);
        if (name === undefined) {
          throw invalidRequest(
            `messages[${position}].tool_call_id must name a tool call of an earlier assistant message.`,
            `messages[${position}].tool_call_id`,
          );
        }
        append('user', [{ functionResponse: { name, response: responseObject(message) } }]);
        return;
      }
      default:
        throw unknownRole(position);
    }
  });
  return { contents, system };
}

function functionDeclaration(tool: ChatRequestOutput['tools'][number], position: number): GeminiFunctionDeclaration {
  const definition = tool.function;
  const declaration: GeminiFunctionDeclaration = { name: definition?.name ?? '' };
  if (definition?.description !== undefined) declaration.description = definition.description;
  if (definition?.parameters_json) {
    const param = `tools[${position}].function.parameters`;
    try {
      const parameters = toGeminiSchema(parseJsonField(definition.parameters_json, param));
      // Gemini rejects an OBJECT without properties: a function without parameters has none.
      if (!(parameters.type === 'OBJECT' && Object.keys(parameters.properties ?? {}).length === 0)) declaration.parameters = parameters;
    } catch (error) {
      if (error instanceof UnconvertibleSchemaError)
        throw invalidRequest(`${param} cannot be expressed in Gemini's schema subset: ${error.message}.`, param, 'unsupported_parameter');
      throw error;
    }
  }
  return declaration;
}

/** Builds the generateContent body; throws INVALID_ARGUMENT for what cannot be translated. */
export function toGeminiRequest(request: ChatRequestOutput, _model: CatalogModel): GeminiRequest {
  const { contents, system } = convertContents(request);
  const body: GeminiRequest = { contents };
  // OpenAI answers a conversation of system messages alone; Gemini refuses empty contents, so
  // the instructions become the one user turn.
  if (system.length > 0 && contents.length === 0) contents.push({ role: 'user', parts: system });
  else if (system.length > 0) body.systemInstruction = { parts: system };
  if (request.tools?.length) {
    body.tools = [{ functionDeclarations: request.tools.map(functionDeclaration) }];
    const choice = request.tool_choice;
    if (choice?.function_name) body.toolConfig = { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [choice.function_name] } };
    else if (choice?.mode === 'required') body.toolConfig = { functionCallingConfig: { mode: 'ANY' } };
    else if (choice?.mode === 'none') body.toolConfig = { functionCallingConfig: { mode: 'NONE' } };
    else if (choice?.mode === 'auto') body.toolConfig = { functionCallingConfig: { mode: 'AUTO' } };
  }
  const config: NonNullable<GeminiRequest['generationConfig']> = {};
  if (request.temperature !== undefined) config.temperature = request.temperature;
  if (request.top_p !== undefined) config.topP = request.top_p;
  if (request.max_tokens !== undefined) config.maxOutputTokens = request.max_tokens;
  if (request.stop?.length) config.stopSequences = [...request.stop];
  if (request.n !== undefined) config.candidateCount = request.n;
  if (request.presence_penalty !== undefined) config.presencePenalty = request.presence_penalty;
  if (request.frequency_penalty !== undefined) config.frequencyPenalty = request.frequency_penalty;
  if (request.seed !== undefined) config.seed = request.seed;
  const format = request.response_format;
  if (format?.type === 'json_object' || format?.type === 'json_schema') config.responseMimeType = 'application/json';
  if (format?.type === 'json_schema' && format.json_schema?.schema_json) {
    const schema = parseJsonField(format.json_schema.schema_json, 'response_format.json_schema.schema');
    try {
      config.responseSchema = toGeminiSchema(schema);
    } catch (error) {
      // Not expressible: JSON output is still asked for, without the schema.
      if (!(error instanceof UnconvertibleSchemaError)) throw error;
    }
  }
  if (Object.keys(config).length > 0) body.generationConfig = config;
  return body;
}
