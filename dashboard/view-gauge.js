import { Component, h } from './preact.js';
import htm from './htm.js';
import { api, get } from './api.js';
import { Meter } from './chart.js';
import { countdown, num, pct, time, usd } from './format.js';

const html = htm.bind(h);

const POLL_MS = 30_000;
/** After turning Gauge on, the service refreshes once by itself: the page looks again this often, this many times. */
const SOON_MS = 1_000;
const SOON_TRIES = 30;
const canNotify = () => typeof Notification === 'function';

/** Share of a window used, from whichever figures the reading has (docs/api.md "Gauge alerts", quota_low). */
function usedShare(w) {
  if (w.utilization !== null && w.utilization !== undefined) return w.utilization;
  if (w.limit > 0 && w.used !== null) return w.used / w.limit;
  if (w.limit > 0 && w.remaining !== null) return 1 - w.remaining / w.limit;
  return null;
}

export class GaugeView extends Component {
  state = {
    data: null,
    error: null,
    now: Date.now(),
    permission: canNotify() ? Notification.permission : 'unsupported',
  };
  /** Events this tab has shown a notification for, so a poll never shows one twice. */
  notified = new Set();

  componentDidMount() {
    this.load();
    this.clock = setInterval(() => this.setState({ now: Date.now() }), 1000);
    this.poll = setInterval(() => this.load(), POLL_MS);
  }
  componentWillUnmount() {
    clearInterval(this.clock);
    clearInterval(this.poll);
    clearTimeout(this.soon);
  }

  async load() {
    try {
      const [dashboard, budgets, alerts] = await Promise.all([
        get('/v1/gauge'),
        get('/v1/gauge/budgets'),
        get('/v1/gauge/alert-events'),
      ]);
      this.setState({ error: null, data: { dashboard, budgets: budgets.data, alerts } });
      this.deliverPending(alerts.data);
    } catch (err) {
      this.setState({ error: err.message });
    }
  }

  fail(err) {
    this.setState({ error: err.message });
  }

  enableGauge = async () => {
    try {
      await api('PATCH', '/v1/settings', { gauge: { enabled: true } });
      await this.load();
      this.untilRead(SOON_TRIES);
    } catch (err) {
      this.fail(err);
    }
  };

  /** Loads again shortly until every account has a reading (the refresh of turning on ends), or tries run out. */
  untilRead(tries) {
    const { dashboard } = this.state.data ?? {};
    const waiting =
      dashboard?.enabled && dashboard.accounts.some((a) => !dashboard.readings.some((r) => r.accountId === a.id));
    if (!waiting || tries <= 0) return;
    this.soon = setTimeout(async () => {
      await this.load();
      this.untilRead(tries - 1);
    }, SOON_MS);
  }

  move = async (id, change) => {
    try {
      await api('PATCH', `/v1/gauge/alert-events/${encodeURIComponent(id)}`, change);
      await this.load();
    } catch (err) {
      this.fail(err);
    }
  };

  /** With the browser's permission, a pending event is shown as a notification and recorded as delivered. */
  deliverPending(events) {
    if (!canNotify() || Notification.permission !== 'granted') return;
    for (const e of events) {
      if (e.delivery !== 'pending' || e.state !== 'firing' || this.notified.has(e.id)) continue;
      this.notified.add(e.id);
      let delivery = 'delivered';
      try {
        new Notification('Switchyard alert', { body: e.summary, tag: e.id });
      } catch {
        delivery = 'failed';
      }
      void this.move(e.id, { delivery });
    }
  }

  askPermission = async () => {
    const permission = await Notification.requestPermission();
    this.setState({ permission });
    if (this.state.data) this.deliverPending(this.state.data.alerts.data);
  };

  render(_props, { data, error }) {
    return html`<section class="view gauge" data-view-ready=${data ? 'true' : 'false'}>
      <div class="toolbar"><h2>Gauge</h2>
        <button type="button" class="secondary" onClick=${() => this.load()}>Reload</button></div>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${data ? this.body(data) : !error && html`<p class="loading">Loading...</p>`}
    </section>`;
  }

  body({ dashboard, budgets, alerts }) {
    return html`
      ${
        !dashboard.enabled &&
        html`<div class="notice">
        <p>Gauge is off: it collects nothing until it is turned on (accounts, budgets and alert rules can be set
          up meanwhile).</p>
        <button type="button" onClick=${this.enableGauge}>Turn Gauge on</button>
      </div>`
      }
      ${this.alertsSection(alerts)} ${this.accountsSection(dashboard)} ${this.budgetsSection(budgets)}
      ${this.statusSection(dashboard.statuses)}`;
  }

  accountsSection({ accounts, readings }) {
    const latest = new Map(readings.map((r) => [r.accountId, r]));
    return html`<h3>Accounts</h3>
      <div class="cards" data-chart="accounts">
        ${accounts.map((a) => {
          const r = latest.get(a.id);
          return html`<article class="card" data-account=${a.id}>
            <header><strong>${a.label}</strong> <span class="muted">${a.providerId}</span>
              <span class=${`badge ${a.status.collection}`}>${a.status.collection}</span>
              ${
                a.status.auth === 'failed' || a.status.auth === 'missing'
                  ? html`<span
                class="badge failing">auth ${a.status.auth}</span>`
                  : ''
              }</header>
            ${
              !r
                ? html`<p class="empty">No reading yet.</p>`
                : html`<table>
                  <tbody>
                    ${r.windows.map((w) => {
                      const share = usedShare(w);
                      return html`<tr data-window=${w.id} data-utilization=${share ?? ''}>
                        <td>${w.id} <span class="muted small">${w.kind}${w.period ? `, ${w.period}` : ''}</span></td>
                        <td>${
                          share === null
                            ? html`<span class="muted small" data-no-limit>no limit</span>`
                            : html`<${Meter} value=${share} label=${pct(share)} />`
                        }</td>
                        <td class="n">${w.limit !== null ? `${num(w.used)} / ${num(w.limit)}` : num(w.used)}</td>
                        <td class="n"
                          title=${time(w.resetsAt)}>${
                            w.resetsAt ? `resets in ${countdown(w.resetsAt, this.state.now)}` : ''
                          }</td>
                      </tr>`;
                    })}
                    ${
                      r.spend &&
                      html`<tr data-spend=${r.spend.providerReported ?? ''}><td>spend</td><td></td>
                      <td class="n">${
                        r.spend.currency === 'USD'
                          ? usd(r.spend.providerReported)
                          : `${r.spend.providerReported ?? '-'} ${r.spend.currency ?? ''}`
                      }</td><td class="n muted">estimated ${usd(r.spend.estimated)}</td></tr>`
                    }
                    ${
                      r.credits &&
                      html`<tr><td>credits</td><td></td>
                      <td class="n">${num(r.credits.remaining)} / ${num(r.credits.total)}</td><td></td></tr>`
                    }
                  </tbody>
                </table>
                <p class="muted small">Read ${time(r.collectedAt)} (${r.source}, ${r.confidence})</p>`
            }
          </article>`;
        })}
      </div>`;
  }

  budgetsSection(budgets) {
    return html`<h3>Budgets</h3>
      ${
        budgets.length === 0
          ? html`<p class="empty">No budgets.</p>`
          : html`<table class="list" data-chart="budgets">
            <thead><tr><th>Budget</th><th>Period</th><th>Spent</th><th></th><th>Amount</th><th>Left</th><th>State</th>
              </tr></thead>
            <tbody>
              ${budgets.map(
                (b) => html`<tr data-budget=${b.id} data-counted=${b.spend.counted ?? 0}
                data-amount=${b.amount}>
                <td>${b.name}</td><td>${b.period} (${b.basis})</td><td class="n">${usd(b.spend.counted ?? 0)}</td>
                <td><${Meter} value=${(b.spend.counted ?? 0) / b.amount} /></td><td class="n">${usd(b.amount)}</td>
                <td class="n">${usd(b.remaining)}</td><td><span class=${`badge ${b.state}`}>${b.state}</span></td>
              </tr>`,
              )}
            </tbody>
          </table>`
      }`;
  }

  statusSection(statuses) {
    if (statuses.length === 0) return null;
    return html`<h3>Provider status</h3>
      <ul class="statuses">
        ${statuses.map(
          (s) => html`<li data-status=${s.providerId}>
          <span class=${`badge ${s.indicator}`}>${s.indicator}</span> ${s.providerId}: ${s.description ?? ''}</li>`,
        )}
      </ul>`;
  }

  alertsSection(alerts) {
    const { permission } = this.state;
    return html`<h3>Alerts</h3>
      ${
        permission === 'default' &&
        html`<p class="hint">
        <button type="button" class="secondary" onClick=${this.askPermission}>Show alerts as notifications</button>
        </p>`
      }
      ${
        alerts.data.length === 0
          ? html`<p class="empty">
            ${alerts.enabled ? 'No alerts in the last 30 days.' : 'No alerts while Gauge is off.'}</p>`
          : html`<table class="list" data-chart="alerts">
            <thead><tr><th>Fired</th><th>Alert</th><th>State</th><th>Delivery</th><th></th></tr></thead>
            <tbody>
              ${alerts.data.map(
                (e) => html`<tr data-alert=${e.id} data-state=${e.state} data-delivery=${e.delivery}>
                <td>${time(e.firedAt)}</td><td>${e.summary}</td>
                <td><span class=${`badge ${e.state}`}>${e.state}</span></td><td>${e.delivery}</td>
                <td class="actions">
                  ${
                    e.state === 'firing' &&
                    html`<button type="button" data-action="acknowledge"
                    onClick=${() => this.move(e.id, { state: 'acknowledged' })}>Acknowledge</button>`
                  }
                  ${
                    e.state !== 'resolved' &&
                    html`<button type="button" class="secondary" data-action="resolve"
                    onClick=${() => this.move(e.id, { state: 'resolved' })}>Resolve</button>`
                  }
                  ${
                    e.delivery === 'pending' &&
                    html`<button type="button" class="secondary" data-action="delivered"
                    title="Record that this alert reached you"
                    onClick=${() => this.move(e.id, { delivery: 'delivered' })}>Mark delivered</button>`
                  }
                </td>
              </tr>`,
              )}
            </tbody>
          </table>`
      }`;
  }
}
