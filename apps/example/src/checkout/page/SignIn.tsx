import { useState, type FormEvent } from 'react';

const TOKEN_ENTRY = 'checkout:token';
/** The shape of a demo token (`acct_alice1.<22 characters>`); the server checks its signature. */
const DEMO_TOKEN = /^acct_[A-Za-z0-9]{1,64}\.[A-Za-z0-9_-]{22}$/;

/**
 * The tab's demo token. Kept in `sessionStorage`: this origin's, this tab's, gone with the tab;
 * never in the URL (which reaches history, logs and referrers) and never in a cookie (which the
 * browser would attach to requests other sites make). It leaves the page only as the
 * `Authorization: Bearer` header.
 */
export const demoToken = {
  read: (): string | null => sessionStorage.getItem(TOKEN_ENTRY),
  save: (token: string): void => sessionStorage.setItem(TOKEN_ENTRY, token),
  forget: (): void => sessionStorage.removeItem(TOKEN_ENTRY),
};

/** A form for the demo token: pasted, checked for its shape, kept for the tab. */
export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [error, setError] = useState<string | null>(null);
  const onSubmit = (event: FormEvent<HTMLFormElement>) => {
    // Never submitted: the token must not travel in a URL or a form body.
    event.preventDefault();
    const token = String(new FormData(event.currentTarget).get('token') ?? '').trim();
    if (!DEMO_TOKEN.test(token)) {
      setError('not a demo token: acct_<letters or digits>.<22 characters>');
      return;
    }
    demoToken.save(token);
    onSignedIn();
  };
  return (
    <main>
      <h1>idem checkout</h1>
      <form className="card" data-testid="sign-in" onSubmit={onSubmit}>
        <h2>Sign in</h2>
        <p className="note">
          Paste a demo token: the output of <code>pnpm demo-token acct_alice1</code>. This tab keeps
          it and sends it as <code>Authorization: Bearer</code>, never in the address.
        </p>
        <input
          name="token"
          type="password"
          autoComplete="off"
          spellCheck={false}
          size={48}
          aria-label="demo token"
          data-testid="token"
        />{' '}
        <button type="submit" data-testid="sign-in-button">
          Sign in
        </button>
        {error && <p className="error">{error}</p>}
      </form>
    </main>
  );
}
