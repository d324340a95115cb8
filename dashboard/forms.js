import { Component, h } from './preact.js';
import htm from './htm.js';
import { familyWords } from './format.js';

const html = htm.bind(h);

// What the set-up views share: an API error in plain words (endpoint families as format.js words them), and a
// button that asks once more before it does something that cannot be undone.

/** An error of a write, as a sentence for the person who pressed the button. */
export function plainError(err) {
  if (err.status === 403)
    return `This token may not do that: ${words(err.message)} Sign in with a token that has the scope it needs.`;
  if (err.status === undefined) return 'The service did not answer. Is it still running?';
  return words(err.message);
}

const words = (text) =>
  String(text)
    .replace(/\bstyleA\.(\w+)/g, (_m, name) => familyWords(`styleA.${name}`))
    .replace(/\bstyleB\.(\w+)/g, (_m, name) => familyWords(`styleB.${name}`))
    .replace(/\bstyleA\b/g, 'OpenAI-style')
    .replace(/\bstyleB\b/g, 'Anthropic-style');

/**
 * Runs `fn` (a write) for a view: a failure is put in `state.errors[where]` (a 401 signs the tab out: api.js)
 * for the form or row it came from. Resolves with fn's answer, or undefined when it failed.
 */
export async function attempt(view, where, fn) {
  view.setState({ busy: where, errors: { ...view.state.errors, [where]: null } });
  try {
    const answer = await fn();
    view.setState({ busy: null });
    return answer ?? true;
  } catch (err) {
    view.setState({ busy: null, errors: { ...view.state.errors, [where]: plainError(err) } });
    return undefined;
  }
}

/** The inline error of one form or row, read by screen readers as it appears. */
export const inlineError = (text) => (text ? html`<p class="error" role="alert">${text}</p>` : null);

/** The view's reload error, with what to do about it. */
export function loadError(err) {
  if (err.status === 403) return `This view needs a token with more scopes: ${words(err.message)}`;
  return plainError(err);
}

/** "Remove" that turns into "Remove X? [Yes, remove] [Cancel]" before it acts. */
export class ConfirmButton extends Component {
  state = { asking: false };

  componentDidUpdate(_props, before) {
    if (this.state.asking && !before.asking) this.yes?.focus();
  }

  render({ label, question, confirm, action, disabled }, { asking }) {
    if (!asking)
      return html`<button type="button" class="secondary" data-action=${action} disabled=${disabled}
        onClick=${() => this.setState({ asking: true })}>${label}</button>`;
    return html`<span class="confirm" role="group" aria-label=${question}>
      <span>${question}</span>
      <button type="button" class="danger" data-action=${`${action}-confirm`}
        ref=${(el) => {
          this.yes = el;
        }}
        onClick=${() => {
          this.setState({ asking: false });
          this.props.onConfirm();
        }}>${confirm}</button>
      <button type="button" class="secondary" onClick=${() => this.setState({ asking: false })}>Cancel</button>
    </span>`;
  }
}
