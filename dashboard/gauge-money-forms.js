import { Component, h } from './preact.js';
import htm from './htm.js';
import { api } from './api.js';
import { usd } from './format.js';
import { attempt, ConfirmButton, inlineError } from './forms.js';

const html = htm.bind(h);

// Budgets and alert rules for the Gauge set-up view: a list with Edit and Remove, and one form that creates or,
// after Edit, changes (PATCH) a record. docs/api.md "Gauge budgets" and "Gauge alerts" say what each field means.

const PERIODS = { day: 'Day', week: 'Week (Monday to Sunday)', month: 'Month' };
const BASES = {
  estimated: 'Estimated from the prices of this service\u2019s calls',
  provider_reported: 'What the provider reports',
};
const BUDGET_FORM = { name: '', amount: '', period: 'month', basis: 'estimated', thresholds: '50, 80, 100', ids: [] };

const numbers = (text) =>
  text
    .split(/[\s,%]+/)
    .filter(Boolean)
    .map(Number);
const focusSoon = (id) => setTimeout(() => document.getElementById(id)?.focus(), 0);

export class Budgets extends Component {
  state = { form: BUDGET_FORM, editing: null, errors: {}, busy: null };

  edit = (b) => {
    const form = {
      name: b.name,
      amount: String(b.amount),
      period: b.period,
      basis: b.basis,
      thresholds: b.thresholds.join(', '),
      ids: b.scope?.providerIds ?? [],
    };
    this.setState({ editing: b.id, form, errors: {} });
    focusSoon('b-name');
  };
  cancel = () => this.setState({ editing: null, form: BUDGET_FORM, errors: {} });

  field = (name) => (e) => this.setState({ form: { ...this.state.form, [name]: e.currentTarget.value } });
  toggle = (id, on) => {
    const ids = this.state.form.ids.filter((x) => x !== id);
    this.setState({ form: { ...this.state.form, ids: on ? [...ids, id] : ids } });
  };

  submit = async (event) => {
    event.preventDefault();
    const { form, editing } = this.state;
    const body = {
      name: form.name.trim(),
      amount: Number(form.amount),
      period: form.period,
      basis: form.basis,
      thresholds: numbers(form.thresholds),
      scope: { providerIds: form.ids },
    };
    const write = editing
      ? () => api('PATCH', `/v1/gauge/budgets/${encodeURIComponent(editing)}`, body)
      : () => api('POST', '/v1/gauge/budgets', body);
    if (!(await attempt(this, 'form', write))) return;
    this.setState({ editing: null, form: BUDGET_FORM });
    await this.props.onDone();
  };

  remove = async (b) => {
    const path = `/v1/gauge/budgets/${encodeURIComponent(b.id)}`;
    if (!(await attempt(this, b.id, () => api('DELETE', path)))) return;
    if (this.state.editing === b.id) this.cancel();
    await this.props.onDone();
  };

  render({ budgets, providers }, { form, editing, errors, busy }) {
    return html`<h3>Budgets</h3>
      ${
        budgets.length === 0
          ? html`<p class="empty" data-empty="budgets">No budgets. Create one below to see a period\u2019s spend
            against an amount (and, with an alert rule, be told when it nears it).</p>`
          : html`<div class="scroll"><table class="list" data-chart="budget-setup">
            <thead><tr><th>Budget</th><th>Period</th><th>Amount</th><th>Spent</th><th>Warn at</th><th></th></tr>
              </thead>
            <tbody>${budgets.map(
              (b) => html`<tr data-budget=${b.id}>
                <td>${b.name}${inlineError(errors[b.id])}</td><td>${b.period}</td>
                <td class="n">${usd(b.amount)}</td><td class="n">${usd(b.spend.counted ?? 0)}</td>
                <td>${b.thresholds.map((t) => `${t}%`).join(', ')}</td>
                <td><div class="actions">
                  <button type="button" class="secondary" data-action="edit" onClick=${() => this.edit(b)}>Edit</button>
                  <${ConfirmButton} label="Remove" action="remove" question=${`Remove ${b.name}?`}
                    confirm="Yes, remove" disabled=${busy === b.id} onConfirm=${() => this.remove(b)} />
                </div></td>
              </tr>`,
            )}</tbody>
          </table></div>`
      }
      <h4>${editing ? 'Change the budget' : 'Create a budget'}</h4>
      <form class="setup" data-form="budget" data-editing=${editing ?? ''} onSubmit=${this.submit}>
        <label for="b-name">Name</label>
        <input id="b-name" type="text" required maxlength="200" value=${form.name} onInput=${this.field('name')} />
        <label for="b-amount">Amount (USD)</label>
        <input id="b-amount" type="number" required min="0.01" step="0.01" value=${form.amount}
          onInput=${this.field('amount')} />
        <label for="b-period">Period</label>
        <select id="b-period" value=${form.period} onChange=${this.field('period')}>
          ${Object.entries(PERIODS).map(([v, label]) => html`<option value=${v}>${label}</option>`)}
        </select>
        <label for="b-basis">Spend counted</label>
        <select id="b-basis" value=${form.basis} onChange=${this.field('basis')}>
          ${Object.entries(BASES).map(([v, label]) => html`<option value=${v}>${label}</option>`)}
        </select>
        <label for="b-thresholds">Warn at (% of the amount)</label>
        <input id="b-thresholds" type="text" value=${form.thresholds} onInput=${this.field('thresholds')} />
        ${
          providers.length > 0 &&
          html`<fieldset>
            <legend>Only these providers <span class="muted">(none ticked: all of them)</span></legend>
            ${providers.map(
              (p) => html`<label><input type="checkbox" value=${p.id} checked=${form.ids.includes(p.id)}
                onChange=${(e) => this.toggle(p.id, e.currentTarget.checked)} /> ${p.displayName ?? p.id}</label>`,
            )}
          </fieldset>`
        }
        <div class="wide actions">
          <button type="submit" disabled=${busy === 'form'}>${editing ? 'Save budget' : 'Create budget'}</button>
          ${editing && html`<button type="button" class="secondary" onClick=${this.cancel}>Cancel</button>`}
        </div>
        <div class="wide">${inlineError(errors.form)}</div>
      </form>`;
  }
}

/** Each kind: what it watches, whom it may target, and what its threshold means (null: it takes none). */
const RULE_KINDS = {
  quota_low: { label: 'Quota running low', target: 'quota', threshold: '% of a quota window left (default 20)' },
  quota_exhausted: { label: 'Quota used up', target: 'quota', threshold: null },
  quota_reset: { label: 'Quota window reset', target: 'quota', threshold: null },
  forecast_exhaustion: {
    label: 'Quota will run out soon',
    target: 'quota',
    threshold: 'hours of warning (default 24)',
  },
  budget_threshold: {
    label: 'Budget threshold reached',
    target: 'budget',
    threshold: '% of the budget (empty: the budget\u2019s own thresholds)',
  },
  spend_drift: {
    label: 'Estimated and reported spend differ',
    target: 'quota',
    threshold: '% of difference (default 20)',
  },
  provider_incident: { label: 'Provider incident', target: 'provider', threshold: null },
  collection_failing: {
    label: 'Collection failing',
    target: 'quota',
    threshold: 'failed collections in a row (default 3)',
  },
  reauth_required: { label: 'Key refused (connect again)', target: 'quota', threshold: null },
};
const RULE_FORM = { name: '', kind: 'quota_low', target: '', threshold: '', cooldown: '60', enabled: true };

/** `p:openai`, `a:<account id>`, `b:<budget id>`, or '' for none. */
function targetOf(rule) {
  const t = rule.target ?? {};
  if (t.accountId) return `a:${t.accountId}`;
  if (t.budgetId) return `b:${t.budgetId}`;
  if (t.providerId) return `p:${t.providerId}`;
  return '';
}
function targetBody(value) {
  if (!value) return {};
  const id = value.slice(2);
  return value.startsWith('a:') ? { accountId: id } : value.startsWith('b:') ? { budgetId: id } : { providerId: id };
}

export class AlertRules extends Component {
  state = { form: RULE_FORM, editing: null, errors: {}, busy: null };

  edit = (r) => {
    const form = {
      name: r.name,
      kind: r.kind,
      target: targetOf(r),
      threshold: r.threshold === null ? '' : String(r.threshold),
      cooldown: String(r.cooldownMinutes),
      enabled: r.enabled,
    };
    this.setState({ editing: r.id, form, errors: {} });
    focusSoon('r-name');
  };
  cancel = () => this.setState({ editing: null, form: RULE_FORM, errors: {} });

  field = (name) => (e) => this.setState({ form: { ...this.state.form, [name]: e.currentTarget.value } });
  /** Another kind takes other targets and another threshold: both start again. */
  pickKind = (e) =>
    this.setState({ form: { ...this.state.form, kind: e.currentTarget.value, target: '', threshold: '' } });

  submit = async (event) => {
    event.preventDefault();
    const { form, editing } = this.state;
    const kind = RULE_KINDS[form.kind];
    const body = { name: form.name.trim(), target: targetBody(form.target), enabled: form.enabled };
    if (form.cooldown !== '') body.cooldownMinutes = Number(form.cooldown);
    if (kind.threshold && form.threshold !== '') body.threshold = Number(form.threshold);
    else if (editing && form.kind === 'budget_threshold') body.threshold = null;
    const write = editing
      ? () => api('PATCH', `/v1/gauge/alert-rules/${encodeURIComponent(editing)}`, body)
      : () => api('POST', '/v1/gauge/alert-rules', { ...body, kind: form.kind });
    if (!(await attempt(this, 'form', write))) return;
    this.setState({ editing: null, form: RULE_FORM });
    await this.props.onDone();
  };

  remove = async (r) => {
    const path = `/v1/gauge/alert-rules/${encodeURIComponent(r.id)}`;
    if (!(await attempt(this, r.id, () => api('DELETE', path)))) return;
    if (this.state.editing === r.id) this.cancel();
    await this.props.onDone();
  };

  targets(kind) {
    const { providers, accounts, budgets } = this.props;
    const which = RULE_KINDS[kind].target;
    if (which === 'budget') return [['', 'Every budget'], ...budgets.map((b) => [`b:${b.id}`, `Budget: ${b.name}`])];
    const ps = providers.filter((p) => p.connectable).map((p) => [`p:${p.id}`, `Provider: ${p.displayName}`]);
    if (which === 'provider') return [['', 'Any provider'], ...ps];
    const as = accounts.map((a) => [`a:${a.id}`, `Account: ${a.label}`]);
    return [['', 'Any account'], ...ps, ...as];
  }

  render({ rules }, { form, editing, errors, busy }) {
    const kind = RULE_KINDS[form.kind];
    const targetWords = (r) =>
      (RULE_KINDS[r.kind] ? this.targets(r.kind) : []).find(([v]) => v === targetOf(r))?.[1] ?? targetOf(r);
    return html`<h3>Alert rules</h3>
      ${
        rules.length === 0
          ? html`<p class="empty" data-empty="rules">No alert rules. Create one below to be told when a quota runs
            low, a budget nears its amount or a provider has an incident (alerts show in Gauge).</p>`
          : html`<div class="scroll"><table class="list" data-chart="rule-setup">
            <thead><tr><th>Rule</th><th>Watches</th><th>Target</th><th>Threshold</th><th>Enabled</th><th></th></tr>
              </thead>
            <tbody>${rules.map(
              (r) => html`<tr data-rule=${r.id} data-enabled=${String(r.enabled)}>
                <td>${r.name}${inlineError(errors[r.id])}</td><td>${RULE_KINDS[r.kind]?.label ?? r.kind}</td>
                <td class="small">${targetWords(r)}</td>
                <td class="n">${r.threshold ?? '-'}</td><td>${r.enabled ? 'yes' : 'no'}</td>
                <td><div class="actions">
                  <button type="button" class="secondary" data-action="edit" onClick=${() => this.edit(r)}>Edit</button>
                  <${ConfirmButton} label="Remove" action="remove" question=${`Remove ${r.name}?`}
                    confirm="Yes, remove" disabled=${busy === r.id} onConfirm=${() => this.remove(r)} />
                </div></td>
              </tr>`,
            )}</tbody>
          </table></div>`
      }
      <h4>${editing ? 'Change the alert rule' : 'Create an alert rule'}</h4>
      <form class="setup" data-form="alert-rule" data-editing=${editing ?? ''} onSubmit=${this.submit}>
        <label for="r-name">Name</label>
        <input id="r-name" type="text" required maxlength="200" value=${form.name} onInput=${this.field('name')} />
        <label for="r-kind">Alert when</label>
        <select id="r-kind" value=${form.kind} disabled=${Boolean(editing)}
          onChange=${this.pickKind}>
          ${Object.entries(RULE_KINDS).map(([v, k]) => html`<option value=${v}>${k.label}</option>`)}
        </select>
        <label for="r-target">For</label>
        <select id="r-target" value=${form.target} onChange=${this.field('target')}>
          ${this.targets(form.kind).map(([v, label]) => html`<option value=${v}>${label}</option>`)}
        </select>
        ${
          kind.threshold &&
          html`<label for="r-threshold">Threshold</label>
          <input id="r-threshold" type="number" step="any" value=${form.threshold} onInput=${this.field('threshold')} />
          <p class="hint wide">${kind.threshold}</p>`
        }
        <label for="r-cooldown">Quiet for (minutes)</label>
        <input id="r-cooldown" type="number" min="0" max="10080" value=${form.cooldown}
          onInput=${this.field('cooldown')} />
        <label class="wide"><input type="checkbox" checked=${form.enabled}
          onChange=${(e) => this.setState({ form: { ...form, enabled: e.currentTarget.checked } })} /> Enabled</label>
        <div class="wide actions">
          <button type="submit" disabled=${busy === 'form'}>${editing ? 'Save rule' : 'Create rule'}</button>
          ${editing && html`<button type="button" class="secondary" onClick=${this.cancel}>Cancel</button>`}
        </div>
        <div class="wide">${inlineError(errors.form)}</div>
      </form>`;
  }
}
