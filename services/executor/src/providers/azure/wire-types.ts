/**
 * Azure OpenAI's chat-completions wire format: OpenAI's (../openai-compatible/wire-types.ts), with
 * what Azure adds, as its REST reference (`2024-10-21` data-plane inference spec) documents it:
 * content-filter results on the prompt and each choice, and an error envelope whose `code` is
 * `content_filter` when the filter refused the prompt (`innererror.code`
 * `ResponsibleAIPolicyViolation`, with the filter's results).
 */
export type { OpenAiChatChunk, OpenAiChatRequest, OpenAiChatResponse } from '../openai-compatible/wire-types.js';

/** One category's verdict (hate, sexual, violence, self_harm; jailbreak and protected material detected). */
export interface AzureContentFilterResult {
  filtered: boolean;
  severity?: 'safe' | 'low' | 'medium' | 'high';
  detected?: boolean;
}

/** The content filter's verdicts, by category. */
export type AzureContentFilterResults = Record<string, AzureContentFilterResult>;

/** The results on the prompt (`prompt_filter_results`, on a whole response or a stream's first chunk). */
export interface AzurePromptFilterResult {
  prompt_index: number;
  content_filter_results: AzureContentFilterResults;
}

/** Azure's error envelope. */
export interface AzureErrorBody {
  error?: {
    message?: string;
    type?: string | null;
    param?: string | null;
    /** `content_filter` for a filtered prompt; `429`, `DeploymentNotFound`, `401`... otherwise. */
    code?: string | number | null;
    status?: number;
    innererror?: { code?: string; content_filter_result?: AzureContentFilterResults };
  };
}
