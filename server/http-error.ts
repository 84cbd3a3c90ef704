/** The gateway's HTTP errors: what a route throws, answered by ojs-server.ts's error handler in the OJS error body. */
/** An HTTP error of the OJS catalog. */
export class HttpError extends Error {
  /** Whether the client may send the request again; by default a 5xx or a 429 (see the error handler). */
  retryable?: boolean;
  /** A 5xx: whether what the request asked was written (`'unknown'`: it may have been). */
  written?: boolean | 'unknown';
  /** `error.type`, beside the code: `validation_error` on a 422 for a retry policy (validationError). */
  type?: string;

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
    readonly hint?: string,
  ) {
    super(message);
  }
}
