import { Component, h } from './preact.js';
import htm from './htm.js';
import { api, get } from './api.js';
import { time } from './format.js';
import { attempt, ConfirmButton, inlineError, loadError } from './forms.js';

const html = htm.bind(h);

// Supervised services (docs/api.md "Supervised services"): llama-server processes the service starts, watches
// and stops, each serving one GGUF file of the model library. Adding one needs an admin token and a
// llama-server on the service's PATH; start and stop need manage. While one is starting or stopping the list
// is read again every 2 s.

const POLL_MS = 2_000;
const MOVING = new Set(['starting', 'restarting', 'stopping']);
const EMPTY_FORM = { model: '', id: '', port: '', start: true };
const badge = (state) => (state === 'running' ? 'ok' : state === 'failed' ? 'corrupt' : 'partial');

export class ServicesView extends Component {
  state = { data: null, error: null, errors: {}, busy: null, form: EMPTY_FORM };

  componentDidMount() {
    this.load();
  }
  componentWillUnmount() {
    clearTimeout(this.poll);
  }

  load = async () => {
    clearTimeout(this.poll);
    try {
      const [services, library] = await Promise.all([get('/v1/services'), get('/v1/runtime/models')]);
      const models = library.data.filter((m) => m.health === 'ok');
      const form = models.some((m) => m.name === this.state.form.model)
        ? this.state.form
        : { ...this.state.form, model: models[0]?.name ?? '' };
      this.setState({ error: null, form, data: { services: services.data, models, problem: library.problem } });
      if (services.data.some((s) => MOVING.has(s.state))) this.poll = setTimeout(this.load, POLL_MS);
    } catch (err) {
      this.setState({ error: loadError(err) });
    }
  };

  field = (name) => (e) => this.setState({ form: { ...this.state.form, [name]: e.currentTarget.value } });

  add = async (event) => {
    event.preventDefault();
    const { model, id, port, start } = this.state.form;
    const body = { kind: 'llamacpp', model, autoStart: start };
    if (id.trim()) body.id = id.trim();
    if (port !== '') body.port = Number(port);
    if (!(await attempt(this, 'add', () => api('POST', '/v1/services', body)))) return;
    this.setState({ form: { ...EMPTY_FORM, model } });
    await this.load();
  };

  act = async (s, action) => {
    const path = `/v1/services/${encodeURIComponent(s.id)}/actions/${action}`;
    if (await attempt(this, s.id, () => api('POST', path))) await this.load();
  };

  remove = async (s) => {
    if (await attempt(this, s.id, () => api('DELETE', `/v1/services/${encodeURIComponent(s.id)}`))) await this.load();
  };

  render(_props, { data, error }) {
    return html`<section class="view services" data-view-ready=${data ? 'true' : 'false'}>
      <div class="toolbar"><h2>Services</h2>
        <button type="button" class="secondary" onClick=${this.load}>Reload</button></div>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${
        data
          ? html`${this.list(data.services)} ${this.addForm(data)}`
          : !error && html`<p class="loading">Loading...</p>`
      }
    </section>`;
  }

  list(services) {
    const { errors, busy } = this.state;
    const supervised = services.filter((s) => s.kind === 'llamacpp');
    return html`${
      supervised.length === 0 &&
      html`<p class="empty" data-empty="services">No llama-server runs under Switchyard yet. Add one below for a
        GGUF file of the model library; the embedded runtime needs none.</p>`
    }
      <div class="scroll"><table class="list" data-chart="service-setup">
        <thead><tr><th>Service</th><th>State</th><th>Model</th><th>Address</th><th>Restarts</th><th></th></tr></thead>
        <tbody>${services.map(
          (s) => html`<tr data-service=${s.id} data-state=${s.state}>
            <td><code>${s.id}</code>${s.kind === 'embedded' ? html` <span class="muted small">(built in)</span>` : ''}
              ${inlineError(errors[s.id])}</td>
            <td><span class=${`badge ${badge(s.state)}`}>${s.state}</span>${
              s.nextStartAt ? html` <span class="muted small">again ${time(s.nextStartAt)}</span>` : ''
            }${
              s.lastExit && s.state === 'failed'
                ? html` <span class="muted small">(${s.lastExit.reason.replace(/_/g, ' ')})</span>`
                : ''
            }</td>
            <td>${s.kind === 'embedded' ? `${s.loadedModels} loaded` : html`<code>${s.model}</code>`}</td>
            <td class="small">${s.url ?? '-'}</td><td class="n">${s.restarts}</td>
            <td>${
              s.kind === 'embedded'
                ? html`<span class="muted small">starts and stops with Switchyard</span>`
                : html`<div class="actions">
                  ${
                    s.desired === 'running'
                      ? html`<button type="button" class="secondary" data-action="stop" disabled=${busy === s.id}
                        onClick=${() => this.act(s, 'stop')}>Stop</button>`
                      : html`<button type="button" data-action="start" disabled=${busy === s.id}
                        onClick=${() => this.act(s, 'start')}>Start</button>`
                  }
                  <${ConfirmButton} label="Remove" action="remove" question=${`Remove ${s.id}?`}
                    confirm="Yes, remove" disabled=${busy === s.id} onConfirm=${() => this.remove(s)} />
                </div>`
            }</td>
          </tr>`,
        )}</tbody>
      </table></div>
      <p class="hint">To route calls to a running one, add a provider of kind "llama.cpp server"
        in <a href="#providers">Providers</a> with its address as the base URL.</p>`;
  }

  addForm({ models, problem }) {
    const { form, errors, busy } = this.state;
    if (models.length === 0)
      return html`<h3>Add a llama-server</h3>
        <p class="empty" data-empty="library">No usable GGUF file in the models folder. Put one there
          (the <code>runtime.modelsDirectory</code> setting says which folder; by default <code>models</code>
          in the data directory), then Reload.${problem ? ` ${problem}` : ''}</p>`;
    return html`<h3>Add a llama-server</h3>
      <form class="setup" data-form="add-service" onSubmit=${this.add}>
        <label for="s-model">Model file</label>
        <select id="s-model" required value=${form.model} onChange=${this.field('model')}>
          ${models.map((m) => html`<option value=${m.name}>${m.name}</option>`)}
        </select>
        <label for="s-id">ID <span class="muted">(optional)</span></label>
        <input id="s-id" type="text" placeholder="llamacpp-1" value=${form.id} onInput=${this.field('id')}
          pattern="[a-z0-9][a-z0-9\\-]{0,62}" title="Lower-case letters, digits and dashes" spellcheck="false" />
        <label for="s-port">Port <span class="muted">(optional)</span></label>
        <input id="s-port" type="number" min="1024" max="65535" placeholder="a free one" value=${form.port}
          onInput=${this.field('port')} />
        <label class="wide"><input type="checkbox" checked=${form.start}
          onChange=${(e) => this.setState({ form: { ...form, start: e.currentTarget.checked } })} /> Start it now,
          and again whenever Switchyard starts</label>
        <p class="hint wide">Switchyard runs the first <code>llama-server</code> on its PATH with this file on
          127.0.0.1, restarts it if it dies, and stops it when it stops.</p>
        <div class="wide"><button type="submit" disabled=${busy === 'add'}>Add service</button></div>
        <div class="wide">${inlineError(errors.add)}</div>
      </form>`;
  }
}
