import { Component, h } from './preact.js';
import htm from './htm.js';
import { api, get } from './api.js';
import { Meter } from './chart.js';
import { bytes, time } from './format.js';
import { attempt, inlineError } from './forms.js';

const html = htm.bind(h);

const POLL_MS = 15_000;

// Why the scheduler keeps a loaded model (docs/api.md, Local-model scheduler); none: cold, the first to go.
const warmWords = (resident) => (resident ? resident.warm.join(', ') || 'cold' : '-');

export class HardwareView extends Component {
  state = { data: null, error: null, refreshing: false, errors: {}, busy: null };

  componentDidMount() {
    this.load();
    this.poll = setInterval(() => this.load(), POLL_MS);
  }
  componentWillUnmount() {
    clearInterval(this.poll);
  }

  async load() {
    try {
      const [hardware, loaded, library, services] = await Promise.all([
        get('/v1/hardware/telemetry'),
        get('/v1/runtime/loaded'),
        get('/v1/runtime/models'),
        get('/v1/services'),
      ]);
      this.setState({
        error: null,
        data: { hardware, loaded: loaded.data, memory: loaded.memory, library, services: services.data },
      });
    } catch (err) {
      this.setState({ error: err.message });
    }
  }

  refresh = async () => {
    this.setState({ refreshing: true });
    try {
      const hardware = await api('POST', '/v1/hardware/refresh');
      this.setState({ data: { ...this.state.data, hardware } });
    } catch (err) {
      this.setState({ error: err.message });
    } finally {
      this.setState({ refreshing: false });
    }
  };

  /** A pin keeps the model loaded and never evicted; stored, so it holds across restarts. */
  pin = async (m) => {
    const path = `/v1/runtime/residency/${encodeURIComponent(m.modelId)}`;
    if (await attempt(this, m.modelId, () => api('PATCH', path, { pinned: !m.resident?.pinned }))) await this.load();
  };

  render(_props, { data, error, refreshing }) {
    return html`<section class="view hardware" data-view-ready=${data ? 'true' : 'false'}>
      <div class="toolbar"><h2>Runtime & hardware</h2>
        <button type="button" class="secondary" disabled=${refreshing} onClick=${this.refresh}>Probe again</button>
        </div>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${data ? this.body(data) : !error && html`<p class="loading">Loading...</p>`}
    </section>`;
  }

  budget(memory) {
    if (!memory) return null;
    return html`<p class="muted" data-budget-held=${memory.heldBytes} data-budget-bytes=${memory.budgetBytes}>
      Memory budget: held ${bytes(memory.heldBytes)} of ${bytes(memory.budgetBytes)} (${memory.budgetSource})${
        memory.queued ? `, ${memory.queued} ${memory.queued === 1 ? 'load' : 'loads'} waiting` : ''
      }</p>`;
  }

  body({ hardware: hw, loaded, memory, library, services }) {
    const mem = hw.memory;
    const usedShare = mem && mem.totalBytes ? 1 - mem.availableBytes / mem.totalBytes : null;
    const { errors, busy } = this.state;
    return html`
      <h3>Loaded models</h3>
      ${this.budget(memory)}
      ${
        loaded.length === 0
          ? html`<p class="empty">No model is loaded.</p>`
          : html`<table class="list" data-chart="loaded">
            <thead><tr><th>Model</th><th>Runtime</th><th>Context</th><th>Sequences</th><th>Memory</th><th>Placement</th>
              <th>Unloads</th><th>Kept warm by</th><th></th></tr></thead>
            <tbody>
              ${loaded.map(
                (m) => html`<tr data-loaded=${m.modelId} data-pinned=${m.resident?.pinned ? 'true' : 'false'}>
                <td><code>${m.modelId}</code>${inlineError(errors[m.modelId])}</td>
                <td>${m.runtime}</td><td class="n">${m.contextSize}</td><td class="n">${m.sequences}</td>
                <td class="n">${bytes(m.memoryBytes)}</td><td>${m.placement}</td>
                  <td>${m.expiresAt ? time(m.expiresAt) : 'in use'}</td>
                  <td data-warm>${warmWords(m.resident)}</td>
                  <td><button type="button" class="secondary" data-action="pin" disabled=${busy === m.modelId}
                    onClick=${() => this.pin(m)}>${m.resident?.pinned ? 'Unpin' : 'Pin'}</button></td></tr>`,
              )}
            </tbody>
          </table>`
      }
      <h3>Services</h3>
      <table class="list" data-chart="services">
        <thead><tr><th>Service</th><th>Kind</th><th>State</th><th>Model</th><th>URL</th><th>Restarts</th>
          <th>Last exit</th></tr></thead>
        <tbody>
          ${services.map(
            (s) => html`<tr data-service=${s.id} data-state=${s.state}><td><code>${s.id}</code></td>
            <td>${s.kind}</td>
            <td><span class=${`badge ${
              s.state === 'running' ? 'ok' : s.state === 'failed' ? 'corrupt' : 'partial'
            }`}>${s.state}</span>${
              s.nextStartAt ? html` <span class="muted">again ${time(s.nextStartAt)}</span>` : ''
            }</td>
            <td>${s.kind === 'embedded' ? `${s.loadedModels} loaded` : html`<code>${s.model}</code>`}</td>
              <td>${s.url ?? '-'}</td>
            <td class="n">${s.restarts}</td>
              <td>${
                s.lastExit
                  ? `${s.lastExit.reason}${
                      s.lastExit.code !== null
                        ? ` (${s.lastExit.code})`
                        : s.lastExit.signal
                          ? ` (${s.lastExit.signal})`
                          : ''
                    }`
                  : '-'
              }</td></tr>`,
          )}
        </tbody>
      </table>
      <h3>Model library</h3>
      ${library.problem && html`<p class="error">${library.problem}</p>`}
      ${
        library.data.length === 0
          ? html`<p class="empty">No GGUF file in the models directory.</p>`
          : html`<table class="list" data-chart="library">
            <thead><tr><th>File</th><th>Health</th><th>Architecture</th><th>Size</th></tr></thead>
            <tbody>${library.data.map(
              (m) => html`<tr data-file=${m.name}><td><code>${m.name}</code></td><td>
              <span class=${`badge ${m.health}`}>${m.health}</span> ${m.problem ?? ''}</td>
              <td>${m.architecture ?? '-'}</td><td class="n">${bytes(m.sizeBytes)}</td></tr>`,
            )}</tbody>
          </table>`
      }
      <h3>Hardware</h3>
      <dl class="facts" data-chart="hardware">
        <dt>System</dt>
          <dd>${[hw.os?.distro, hw.os?.release, hw.arch].filter(Boolean).join(' ')} <span
            class="muted">${hw.os?.kernel ?? ''}</span></dd>
        <dt>CPU</dt>
          <dd data-cores=${hw.cpu?.logicalCores ?? ''}>${hw.cpu?.brand ?? '-'} (${
            hw.cpu?.logicalCores ?? '?'
          } threads, ${hw.cpu?.physicalCores ?? '?'} cores)</dd>
        <dt>Memory</dt><dd data-total=${mem?.totalBytes ?? ''}>
          <${Meter} value=${usedShare} /> ${bytes(mem ? mem.totalBytes - mem.availableBytes : null)} used of ${bytes(
            mem?.totalBytes,
          )}</dd>
        <dt>GPUs</dt>
          <dd>${
            hw.gpus?.length
              ? hw.gpus.map(
                  (g) => html`<div>${g.name} <span
            class="muted">${g.backend}, ${bytes(g.memoryBytes)} ${g.memoryKind}</span></div>`,
                )
              : 'none found'
          }</dd>
        <dt>Probed</dt>
          <dd>${time(hw.probedAt)}${hw.stale ? ' (stale)' : ''}${
            hw.partial ? ` (partial: ${hw.reason ?? ''})` : ''
          }</dd>
      </dl>`;
  }
}
