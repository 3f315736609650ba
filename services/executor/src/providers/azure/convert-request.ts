/**
 * The request body Azure OpenAI takes is OpenAI's: the same conversion (model, messages, tools,
 * `stream_options.include_usage`, which Azure honours from api-version 2024-09-01-preview and the
 * 2024-10-21 GA on). On a deployment URL the deployment picks the model and Azure ignores `model`;
 * on the v1 routes `model` names the deployment, which is the catalog's upstream model.
 */
export { toOpenAiRequest as toAzureRequest } from '../openai-compatible/convert-request.js';
