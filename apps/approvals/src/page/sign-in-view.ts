import { escapeHtml } from "./html.js"

/** The sign-in form: a token, and the pre-session CSRF value that the form posts back. */
export function renderSignInBody(input: { csrf: string; problem?: string }): string {
  const problem = input.problem ? `<p class="error-text" role="alert">${escapeHtml(input.problem)}</p>` : ""
  return `<section class="signin">
<h2>Sign in</h2>
<p>Use the sign-in token the service was configured with, or the one it printed when it started.</p>
${problem}<form method="post" action="/signin">
<input type="hidden" name="csrf" value="${escapeHtml(input.csrf)}">
<label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Sign in</button>
</form>
</section>`
}
