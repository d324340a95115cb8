import { Component, h } from './preact.js';
import htm from './htm.js';
import { api } from './api.js';
import { attempt, inlineError } from './forms.js';

const html = htm.bind(h);

// The models view's "Add an alias" form: a name clients may call a model by (docs/api.md "Catalog model
// records", `aliases`). It PATCHes the model's whole alias list with the new name added; the list of a model
// is edited in its row.

export class AliasForm extends Component {
  state = { alias: '', model: '', errors: {}, busy: null };

  submit = async (event) => {
    event.preventDefault();
    const alias = this.state.alias.trim();
    const model = this.props.models.find((m) => m.id === this.state.model);
    if (!alias || !model) return;
    const aliases = [...new Set([...model.aliases, alias])];
    const path = `/v1/catalog/models/${encodeURIComponent(model.id)}`;
    if (!(await attempt(this, 'alias', () => api('PATCH', path, { aliases })))) return;
    this.setState({ alias: '' });
    await this.props.onDone();
  };

  render({ models }, { alias, model, errors, busy }) {
    if (models.length === 0) return null;
    return html`<h3>Add an alias</h3>
      <form class="setup" data-form="add-alias" onSubmit=${this.submit}>
      <label for="a-alias">Alias</label>
      <input id="a-alias" type="text" required maxlength="200" placeholder="e.g. fast" value=${alias}
        pattern="[A-Za-z0-9][A-Za-z0-9._:\\/\\-]{0,199}" title="Letters, digits and . _ : / -" spellcheck="false"
        onInput=${(e) => this.setState({ alias: e.currentTarget.value })} />
      <label for="a-model">For the model</label>
      <select id="a-model" required value=${models.some((m) => m.id === model) ? model : ''}
        onChange=${(e) => this.setState({ model: e.currentTarget.value })}>
        <option value="">Choose a model...</option>
        ${models.map((m) => html`<option value=${m.id}>${m.id}</option>`)}
      </select>
      <p class="hint wide">Clients may then ask for the alias (for example Claude Code's model names) and get this
        model.</p>
      <div class="wide"><button type="submit" disabled=${busy === 'alias'}>Add alias</button></div>
      <div class="wide">${inlineError(errors.alias)}</div>
    </form>`;
  }
}
