import { Component, h } from './preact.js';
import htm from './htm.js';
import { api, pair } from './api.js';

const html = htm.bind(h);

// Two ways in: paste a local token (checked against GET /v1/settings, which any `read` token may call), or ask
// for one by pairing, which a person approves from another client (`switchyard` CLI or an admin token).
export class SignIn extends Component {
  state = { token: '', error: null, busy: false, pairing: null };

  paste = async (event) => {
    event.preventDefault();
    const token = this.state.token.trim();
    if (!token) return;
    this.setState({ busy: true, error: null });
    try {
      await api('GET', '/v1/settings', undefined, token);
      this.props.onToken(token);
    } catch (err) {
      this.setState({
        busy: false,
        error:
          err.status === 401
            ? 'That token is not valid.'
            : err.status === 403
              ? 'That token lacks the read scope.'
              : err.message,
      });
    }
  };

  startPairing = async () => {
    const controller = new AbortController();
    this.controller = controller;
    this.setState({ pairing: { userCode: null }, error: null });
    try {
      const secret = await pair(
        'Switchyard dashboard',
        ['read', 'manage'],
        (pending) => this.setState({ pairing: pending }),
        controller.signal,
      );
      this.props.onToken(secret);
    } catch (err) {
      if (!controller.signal.aborted) this.setState({ pairing: null, error: err.message });
    }
  };

  cancelPairing = () => {
    this.controller?.abort();
    this.setState({ pairing: null });
  };

  componentWillUnmount() {
    this.controller?.abort();
  }

  render(_props, { token, error, busy, pairing }) {
    return html`<main class="sign-in">
      <h1>Switchyard</h1>
      <form onSubmit=${this.paste} aria-label="Sign in with a token">
        <label for="token">Local token</label>
        <input id="token" name="token" type="password" autocomplete="off" spellcheck="false" placeholder="sk-svc-..."
          value=${token} onInput=${(e) => this.setState({ token: e.currentTarget.value })} />
        <button type="submit" disabled=${busy}>Sign in</button>
      </form>
      <p class="hint">The token stays in this tab only (sessionStorage).
        <code>switchyard token</code> prints the admin token.</p>
      <section class="pairing">
        ${
          pairing === null
            ? html`<button type="button" class="secondary"
            onClick=${this.startPairing}>Pair this browser instead</button>`
            : html`<div class="pending" data-pairing=${pairing.id ?? ''}>
              <p>Approve this request from an admin client; check that it shows the code:</p>
              <p class="code">${pairing.userCode ?? '...'}</p>
              <button type="button" class="secondary" onClick=${this.cancelPairing}>Cancel</button>
            </div>`
        }
      </section>
      ${error && html`<p class="error" role="alert">${error}</p>`}
    </main>`;
  }
}
