import { IDEMPOTENCY_KEY_HEADER, ATTEMPT_HEADER, IDEMPOTENT_REPLAYED_HEADER } from '@idem/contract';

/** What became of one attempt, as the page shows it. */
export type AttemptOutcome =
  | 'sending'
  | 'ok'
  | 'replayed'
  | 'in-progress'
  | 'unavailable'
  | 'error'
  | 'connection-lost'
  | 'aborted';

/** One HTTP attempt of an idempotent mutation. */
export interface AttemptRow {
  id: number;
  /** The procedure, e.g. `payments.create`. */
  path: string;
  key: string;
  attempt: number;
  outcome: AttemptOutcome;
  status: number | null;
  /** The `Retry-After` the page could read (a page on another origin reads it only if exposed). */
  retryAfter: string | null;
  startedAt: number;
  endedAt: number | null;
}

type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/**
 * Every attempt idem's link sends, as it happens: a `fetch` wrapper for the link's `http.fetch`
 * that reads the key and attempt number from the request, and the status and
 * `Idempotent-Replayed` from the response. A store for `useSyncExternalStore`.
 */
export class AttemptLog {
  #rows: readonly AttemptRow[] = [];
  #listeners = new Set<() => void>();
  #next = 1;

  readonly subscribe = (onChange: () => void) => {
    this.#listeners.add(onChange);
    return () => void this.#listeners.delete(onChange);
  };

  readonly rows = () => this.#rows;

  /** Wraps `fetchImpl`: requests without `Idempotency-Key` pass through unrecorded. */
  fetch(fetchImpl: Fetch): Fetch {
    return async (input, init) => {
      const headers = new Headers(init?.headers);
      const key = headers.get(IDEMPOTENCY_KEY_HEADER);
      if (key === null) return fetchImpl(input, init);
      const url = new URL(input instanceof Request ? input.url : String(input), location.href);
      const id = this.#add({
        path: url.pathname.split('/').pop() ?? '',
        key,
        attempt: Number(headers.get(ATTEMPT_HEADER) ?? 1),
      });
      try {
        const response = await fetchImpl(input, init);
        this.#update(id, {
          outcome: outcomeOf(response),
          status: response.status,
          retryAfter: response.headers.get('Retry-After'),
        });
        return response;
      } catch (error) {
        const aborted = error instanceof DOMException && error.name === 'AbortError';
        this.#update(id, { outcome: aborted ? 'aborted' : 'connection-lost' });
        throw error;
      }
    };
  }

  #add(row: Pick<AttemptRow, 'path' | 'key' | 'attempt'>): number {
    const id = this.#next++;
    this.#set([
      ...this.#rows,
      {
        ...row,
        id,
        outcome: 'sending',
        status: null,
        retryAfter: null,
        startedAt: Date.now(),
        endedAt: null,
      },
    ]);
    return id;
  }

  #update(id: number, change: Partial<AttemptRow>): void {
    this.#set(
      this.#rows.map((row) => (row.id === id ? { ...row, ...change, endedAt: Date.now() } : row)),
    );
  }

  #set(rows: readonly AttemptRow[]): void {
    this.#rows = rows;
    for (const listener of [...this.#listeners]) listener();
  }
}

function outcomeOf(response: Response): AttemptOutcome {
  if (response.headers.get(IDEMPOTENT_REPLAYED_HEADER) === 'true') return 'replayed';
  if (response.ok) return 'ok';
  if (response.status === 409) return 'in-progress';
  if (response.status === 503) return 'unavailable';
  return 'error';
}
