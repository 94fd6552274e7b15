// hermes-zero dashboard: vanilla JS, no build step. Talks to the same router's JSON API with
// the API key from sessionStorage. Every piece of server data goes into the DOM as text.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const STORE_KEY = 'hermes-zero.api-key';
  const TABS = ['schedule', 'create', 'sessions', 'memory', 'skills', 'pairing', 'status'];
  const REJECTED = 'That API key was not accepted';
  const st = { key: sessionStorage.getItem(STORE_KEY) || '', jobs: [], open: new Set(), runs: {}, editing: null, skills: [], scripts: [], sessions: [], tab: null };

  // ------------------------------------------------------------------ helpers

  /** Creates an element; attrs are attributes (booleans toggle), kids are nodes or text. */
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === false || v === null || v === undefined) continue;
      el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const kid of kids.flat(Infinity)) {
      if (kid === null || kid === undefined || kid === false) continue;
      el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return el;
  }
  const td = (label, ...kids) => h('td', { 'data-label': label }, ...kids);
  const badge = (text, cls, extra) => h('span', Object.assign({ class: `badge ${cls || text}` }, extra), text);

  const fmt = new Intl.DateTimeFormat(undefined, { weekday: 'short', year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
  const tzName = Intl.DateTimeFormat().resolvedOptions().timeZone || 'local time';
  function parseTime(iso) {
    if (!iso) return null;
    const d = new Date(iso);
    return Number.isNaN(d.getTime()) ? null : d;
  }
  /** "in 2 h", "5 min ago", "just now". */
  function relative(d) {
    const s = Math.round((d.getTime() - Date.now()) / 1000);
    const a = Math.abs(s);
    if (a < 45) return s >= 0 ? 'in a moment' : 'just now';
    let v, u;
    if (a < 5400) { v = Math.round(a / 60); u = 'min'; }
    else if (a < 129600) { v = Math.round(a / 3600); u = 'h'; }
    else { v = Math.round(a / 86400); u = 'd'; }
    return s > 0 ? `in ${v} ${u}` : `${v} ${u} ago`;
  }
  /** A <time> with the local date and, below it, a relative label kept fresh. */
  function timeCell(iso, testid) {
    const d = parseTime(iso);
    if (!d) return h('span', { class: 'muted', 'data-testid': testid }, iso ? String(iso) : '—');
    return [h('time', { datetime: d.toISOString(), title: d.toISOString(), 'data-testid': testid }, fmt.format(d)),
      h('span', { class: 'sub', 'data-rel': d.toISOString() }, relative(d))];
  }
  function refreshRelative() {
    for (const el of document.querySelectorAll('[data-rel]')) el.textContent = relative(new Date(el.dataset.rel));
  }

  let noticeTimer = 0;
  function notice(text, bad) {
    const n = $('notice');
    n.textContent = text;
    n.classList.toggle('bad', !!bad);
    n.hidden = false;
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(() => { n.hidden = true; }, 12000);
  }

  class Unauthorized extends Error {}

  /** Calls the JSON API (relative paths, so a path prefix in front of the router works). */
  async function api(method, path, body) {
    const opts = { method, headers: { Authorization: `Bearer ${st.key}` } };
    if (body !== undefined) {
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body);
    }
    let res;
    try { res = await fetch(path, opts); } catch (_) { throw new Error('The gateway could not be reached. Is it running?'); }
    let data = null;
    try { data = await res.json(); } catch (_) { /* not JSON */ }
    if (res.status === 401) {
      signOut(REJECTED);
      throw new Unauthorized(REJECTED);
    }
    if (!res.ok) {
      const err = new Error((data && data.error) || `The gateway answered HTTP ${res.status}`);
      err.status = res.status;
      throw err;
    }
    return data;
  }
  /** Runs an action, showing its failure as a notice (401 already signed out). */
  async function guard(fn) {
    try { return await fn(); } catch (e) { if (!(e instanceof Unauthorized)) notice(e.message, true); return undefined; }
  }

  function setError(id, msg) {
    const p = $(`${id}-error`);
    const input = $(id);
    if (p) { p.textContent = msg || ''; p.hidden = !msg; }
    if (input && 'value' in input) input.setAttribute('aria-invalid', msg ? 'true' : 'false');
  }

  // ------------------------------------------------------------------ sign in / out and tabs

  function signOut(msg) {
    st.key = '';
    sessionStorage.removeItem(STORE_KEY);
    $('nav').hidden = true;
    $('logout').hidden = true;
    for (const t of TABS) $(`panel-${t}`).hidden = true;
    $('login').hidden = false;
    setError('login-key', msg || '');
    $('login-key').value = '';
    $('login-key').focus();
  }

  async function signIn(key) {
    st.key = key;
    const status = await api('GET', 'api/status');
    sessionStorage.setItem(STORE_KEY, key);
    $('login').hidden = true;
    $('nav').hidden = false;
    $('logout').hidden = false;
    $('server-tz').textContent = status.timezone || 'UTC';
    renderStatus(status);
    loadSkills();
    loadScripts();
    const want = location.hash.slice(1);
    showTab(TABS.includes(want) ? want : 'schedule');
  }

  function showTab(name) {
    if (!st.key) return;
    if (st.tab !== name) $('notice').hidden = true;
    st.tab = name;
    for (const t of TABS) {
      $(`panel-${t}`).hidden = t !== name;
      const b = $(`tab-${t}`);
      if (t === name) b.setAttribute('aria-current', 'page'); else b.removeAttribute('aria-current');
    }
    if (location.hash !== `#${name}`) history.replaceState(null, '', `#${name}`);
    document.title = `hermes-zero · ${$(`tab-${name}`).textContent}`;
    if (name === 'schedule') guard(loadJobs);
    if (name === 'create' && !st.editing) resetForm();
    if (name === 'sessions') guard(loadSessions);
    if (name === 'memory') guard(loadMemory);
    if (name === 'skills') guard(loadSkillList);
    if (name === 'pairing') guard(loadPairing);
    if (name === 'status') guard(loadStatus);
  }

  // ------------------------------------------------------------------ Schedule

  async function loadJobs() {
    const data = await api('GET', 'api/jobs?include_disabled=true');
    st.jobs = data.jobs || [];
    renderJobs();
    renderSkipped(data.skipped || []);
    await Promise.all([...st.open].map((id) => loadRuns(id)));
  }

  function renderSkipped(list) {
    const items = list.map((k) => {
      const li = document.createElement('li');
      li.textContent = `#${k.index}${k.id ? ` (${k.id})` : ''}: ${k.reason}`;
      return li;
    });
    $('jobs-skipped').replaceChildren(...items);
    $('jobs-skipped-wrap').hidden = items.length === 0;
  }

  function sortJobs() {
    st.jobs.sort((a, b) => {
      const x = parseTime(a.next_run_at), y = parseTime(b.next_run_at);
      if (x && y && x - y !== 0) return x - y;
      if (!!x !== !!y) return x ? -1 : 1;
      return String(a.name).localeCompare(String(b.name));
    });
  }

  function renderJobs() {
    sortJobs();
    const body = $('jobs-body');
    body.replaceChildren(...st.jobs.flatMap((j) => (st.open.has(j.id) ? [jobRow(j), historyRow(j)] : [jobRow(j)])));
    $('jobs-empty').hidden = st.jobs.length > 0;
    $('jobs-table').hidden = st.jobs.length === 0;
  }

  function jobRow(j) {
    // A paused job is disabled in Hermes' sense (enabled: false); show the pause itself.
    const stateName = j.state === 'paused' ? 'paused' : j.enabled === false ? 'disabled' : j.state;
    const last = j.last_status || 'none';
    const lastAttrs = { 'data-testid': 'job-last-status', title: j.last_error || (j.last_run_at ? `last run ${j.last_run_at}` : 'never run') };
    const paused = j.state === 'paused';
    const act = (action, label, cls) => h('button', {
      type: 'button', class: `small ${cls || ''}`.trim(), 'data-action': action, 'data-testid': `job-${action}`, 'aria-label': `${label} ${j.name}`,
      'aria-expanded': action === 'history' ? String(st.open.has(j.id)) : null,
    }, label);
    return h('tr', { 'data-job-id': j.id, 'data-job-name': j.name, 'data-testid': 'job-row', 'data-state': j.state },
      td('Name', h('strong', { 'data-testid': 'job-name' }, j.name), j.id !== j.name ? h('span', { class: 'sub' }, j.id) : null),
      td('Schedule', h('code', { 'data-testid': 'job-schedule' }, scheduleText(j)), h('span', { class: 'sub', 'data-testid': 'job-schedule-display' }, j.schedule_display)),
      td('Next run', ['scheduled', 'running'].includes(j.state) ? timeCell(j.next_run_at, 'job-next') : h('span', { class: 'muted', 'data-testid': 'job-next' }, '—')),
      td('Last status', badge(last, last, lastAttrs), j.last_error ? h('span', { class: 'err-text', title: j.last_error }, j.last_error) : null),
      td('State', badge(stateName, stateName, { 'data-testid': 'job-state' })),
      td('Actions', h('div', { class: 'actions' },
        paused ? act('resume', 'Resume') : act('pause', 'Pause'),
        act('run', 'Run now'), act('edit', 'Edit'), act('history', 'History'), act('delete', 'Delete', 'danger'))));
  }

  function historyRow(j) {
    const runs = st.runs[j.id];
    let content;
    if (!runs) content = h('p', { class: 'muted' }, 'Loading runs…');
    else if (!runs.length) content = h('p', { class: 'muted', 'data-testid': 'runs-empty' }, 'No runs yet.');
    else content = h('ol', { class: 'runs', 'data-testid': 'runs' }, runs.map(runItem));
    return h('tr', { class: 'history', 'data-history-for': j.id, 'data-history-name': j.name, 'data-testid': 'job-history-row' },
      h('td', { colspan: '6' }, h('h3', {}, `Run history — ${j.name}`), content));
  }

  function runItem(r) {
    const started = parseTime(r.started_at);
    const finished = parseTime(r.finished_at);
    const secs = started && finished ? Math.max(0, Math.round((finished - started) / 1000)) : null;
    return h('li', { 'data-testid': 'run', 'data-run-id': r.run_id },
      h('div', { class: 'row' }, badge(r.status, r.status, { 'data-testid': 'run-status' }),
        h('span', { 'data-testid': 'run-attempt', class: 'muted' }, `attempt ${r.attempt || 1}`),
        started ? h('time', { datetime: started.toISOString() }, fmt.format(started)) : null,
        h('span', { class: 'muted' }, `${r.trigger}${secs !== null ? ` · ${secs} s` : ''}`)),
      r.error ? h('p', { class: 'error', 'data-testid': 'run-error' }, r.error) : null,
      h('pre', { 'data-testid': 'run-output' }, r.output || '(no output)'),
      r.deliveries && r.deliveries.length
        ? h('ul', { 'data-testid': 'run-deliveries', 'aria-label': 'Delivery results' }, r.deliveries.map((d) =>
          h('li', {}, h('code', {}, d.target), ' ', badge(d.status, d.status), d.error ? ` ${d.error}` : '')))
        : h('p', { class: 'muted', 'data-testid': 'run-deliveries' }, 'No deliveries.'));
  }

  async function loadRuns(id) {
    const data = await api('GET', `api/jobs/${encodeURIComponent(id)}/runs`);
    st.runs[id] = data.runs || [];
    const old = document.querySelector(`tr[data-history-for="${CSS.escape(id)}"]`);
    const job = st.jobs.find((j) => j.id === id);
    if (old && job) old.replaceWith(historyRow(job));
  }

  function replaceJob(job) {
    const i = st.jobs.findIndex((j) => j.id === job.id);
    if (i >= 0) st.jobs[i] = job; else st.jobs.push(job);
    renderJobs();
  }

  function focusAction(id, action) {
    const b = document.querySelector(`tr[data-job-id="${CSS.escape(id)}"] button[data-action="${action}"]`);
    if (b) b.focus();
  }

  async function jobAction(action, job, button) {
    const path = `api/jobs/${encodeURIComponent(job.id)}`;
    if (action === 'pause' || action === 'resume') {
      const data = await api('POST', `${path}/${action}`);
      replaceJob(data.job);
      notice(`${action === 'pause' ? 'Paused' : 'Resumed'} “${job.name}”.`);
      focusAction(job.id, action === 'pause' ? 'resume' : 'pause');
    } else if (action === 'run') {
      button.disabled = true;
      button.textContent = 'Running…';
      try {
        const data = await api('POST', `${path}/run`);
        const outcome = data.run_status || data.status;
        const detail = data.error ? ` (${data.error})` : '';
        notice(`Ran “${job.name}”: ${outcome}${detail}.`, outcome !== 'ok');
        st.open.add(job.id);
        await loadJobs();
      } finally {
        button.disabled = false;
        button.textContent = 'Run now';
      }
    } else if (action === 'history') {
      if (st.open.has(job.id)) st.open.delete(job.id); else st.open.add(job.id);
      renderJobs();
      focusAction(job.id, 'history');
      if (st.open.has(job.id)) await loadRuns(job.id);
    } else if (action === 'edit') {
      const data = await api('GET', path);
      st.editing = data.job;
      fillForm(data.job);
      showTab('create');
      $('f-schedule').focus();
    } else if (action === 'delete') {
      if (!(await confirmDialog(`Delete the scheduled task “${job.name}”? It will not run again. This cannot be undone.`, 'Delete'))) return;
      await api('DELETE', path);
      st.jobs = st.jobs.filter((j) => j.id !== job.id);
      st.open.delete(job.id);
      renderJobs();
      notice(`Deleted “${job.name}”.`);
    }
  }

  function confirmDialog(text, okLabel) {
    const d = $('confirm');
    $('confirm-text').textContent = text;
    $('confirm-ok').textContent = okLabel;
    d.returnValue = '';
    return new Promise((resolve) => {
      d.addEventListener('close', () => resolve(d.returnValue === 'ok'), { once: true });
      d.showModal();
      $('confirm-cancel').focus();
    });
  }

  // ------------------------------------------------------------------ Create / edit form

  const FIELDS = ['f-name', 'f-schedule', 'f-timezone', 'f-prompt', 'f-script', 'f-skills', 'f-deliver', 'f-repeat', 'f-options', 'f-guards', 'form'];

  function clearErrors() { for (const f of FIELDS) setError(f, ''); }

  async function loadSkills() {
    const data = await guard(() => api('GET', 'api/skills'));
    if (data) { st.skills = data.skills || []; renderSkills(st.editing ? st.editing.skills || [] : currentSkills()); }
  }

  async function loadScripts() {
    const data = await guard(() => api('GET', 'api/scripts'));
    if (data) { st.scripts = data.scripts || []; renderScripts(st.editing ? st.editing.script || '' : $('f-script').value); }
  }

  /** The script picker: the files of $HERMES_HOME/scripts, plus the job's own if it is gone. */
  function renderScripts(selected) {
    const names = [...(st.scripts || [])];
    if (selected && !names.includes(selected)) names.push(selected);
    $('f-script').replaceChildren(h('option', { value: '' }, 'None'),
      ...names.map((n) => h('option', { value: n, selected: n === selected }, (st.scripts || []).includes(n) ? n : `${n} (not found)`)));
    $('f-script').value = selected || '';
  }

  function currentSkills() {
    return [...document.querySelectorAll('#f-skills-list input:checked')].map((c) => c.value);
  }

  function renderSkills(checked) {
    const names = st.skills.map((s) => s.name);
    const extra = (checked || []).filter((n) => !names.includes(n)).map((name) => ({ name, description: 'not installed', missing: true }));
    const all = [...st.skills, ...extra];
    const list = $('f-skills-list');
    if (!all.length) { list.replaceChildren(h('p', { class: 'muted' }, 'No skills installed (add them under $HERMES_HOME/skills/<name>/SKILL.md).')); return; }
    list.replaceChildren(...all.map((s) => h('label', { for: `skill-${s.name}` },
      h('input', { type: 'checkbox', id: `skill-${s.name}`, value: s.name, checked: (checked || []).includes(s.name), 'data-testid': 'f-skill' }),
      h('span', {}, h('strong', {}, s.title || s.name), s.description ? h('span', { class: s.missing ? 'error' : 'muted' }, ` — ${s.description}`) : null))));
  }

  function showDeliverKind() {
    const kind = $('f-deliver-kind').value;
    for (const el of document.querySelectorAll('[data-show]')) el.hidden = el.dataset.show !== kind;
  }
  function showRepeat() { document.querySelector('[data-show-repeat]').hidden = $('f-repeat').value !== 'times'; }

  function resetForm() {
    st.editing = null;
    $('job-form').reset();
    clearErrors();
    $('f-schedule-preview').hidden = true;
    $('form-title').textContent = 'Create scheduled task';
    $('f-submit').textContent = 'Create task';
    $('f-name').disabled = false;
    showDeliverKind();
    showRepeat();
    renderSkills([]);
    renderScripts('');
  }

  function fillForm(j) {
    resetForm();
    st.editing = j;
    $('form-title').textContent = `Edit “${j.name}”`;
    $('f-submit').textContent = 'Save changes';
    $('f-name').value = j.name || '';
    $('f-schedule').value = scheduleText(j);
    $('f-timezone').value = j.timezone || '';
    $('f-prompt').value = j.prompt || '';
    renderSkills(j.skills || []);
    renderScripts(j.script || '');
    $('f-no-agent').checked = !!j.no_agent;
    fillOptions(j);
    const targets = deliverList(j.deliver);
    const platforms = [...$('f-platform').options].map((o) => o.value);
    if (targets.length === 0) $('f-deliver-kind').value = j.origin ? 'origin' : 'local';
    else if (targets.length === 1 && ['local', 'origin'].includes(targets[0])) $('f-deliver-kind').value = targets[0];
    else if (targets.length === 1 && platforms.includes(targets[0].split(':')[0])) {
      const [p, ...chat] = targets[0].split(':');
      $('f-deliver-kind').value = 'platform';
      $('f-platform').value = p;
      $('f-chat').value = chat.join(':');
    } else {
      $('f-deliver-kind').value = 'custom';
      $('f-deliver-custom').value = targets.join(', ');
    }
    const times = j.repeat && j.repeat.times;
    $('f-repeat').value = !times ? 'forever' : times === 1 ? 'once' : 'times';
    if (times > 1) $('f-repeat-times').value = String(times);
    showDeliverKind();
    showRepeat();
    preview();
  }

  let previewSeq = 0;
  let previewTimer = 0;
  /** Validates the schedule with the server; resolves to the answer (or null when empty). */
  async function preview() {
    const seq = ++previewSeq;
    const schedule = $('f-schedule').value.trim();
    const timezone = $('f-timezone').value.trim();
    if (!schedule) {
      $('f-schedule-preview').hidden = true;
      setError('f-schedule', '');
      return null;
    }
    let r;
    try { r = await api('POST', 'api/schedules/preview', { schedule, timezone: timezone || undefined }); } catch (e) {
      if (!(e instanceof Unauthorized)) setError('f-schedule', e.message);
      return { ok: false };
    }
    if (seq !== previewSeq) return r;
    setError('f-schedule', r.ok || r.field !== 'schedule' ? '' : r.error);
    setError('f-timezone', r.ok || r.field !== 'timezone' ? '' : r.error);
    $('f-schedule-preview').hidden = !r.ok;
    if (r.ok) {
      $('f-schedule-display').textContent = `${r.display[0].toUpperCase()}${r.display.slice(1)} · next ${r.next.length === 1 ? 'run' : `${r.next.length} runs`}:`;
      $('f-schedule-next').replaceChildren(...r.next.map((iso) => {
        const d = new Date(iso);
        return h('li', { 'data-testid': 'preview-time' }, h('time', { datetime: iso }, fmt.format(d)), ` (${relative(d)})`);
      }));
    }
    return r;
  }
  function schedulePreviewSoon() {
    clearTimeout(previewTimer);
    previewTimer = setTimeout(preview, 300);
  }

  function deliverTargets() {
    const kind = $('f-deliver-kind').value;
    if (kind === 'platform') {
      const chat = $('f-chat').value.trim();
      return [chat ? `${$('f-platform').value}:${chat}` : $('f-platform').value];
    }
    if (kind === 'custom') return $('f-deliver-custom').value.split(',').map((t) => t.trim()).filter(Boolean);
    return [kind];
  }

  /** The schedule as written (ours), else Hermes' schedule object's text. */
  function scheduleText(j) {
    if (j.schedule_text) return j.schedule_text;
    const s = j.schedule;
    return typeof s === 'string' ? s : (s && (s.expr || s.run_at || s.display)) || '';
  }

  /** Hermes' `deliver` string (`telegram:1,discord:2`) as a list of targets. */
  function deliverList(d) {
    if (Array.isArray(d)) return d;
    return String(d || '').split(',').map((t) => t.trim()).filter(Boolean);
  }

  function repeatValue() {
    const r = $('f-repeat').value;
    if (r !== 'times') return r;
    const n = Number($('f-repeat-times').value);
    return Number.isInteger(n) && n > 0 ? n : null;
  }

  /** Puts a server validation message next to the field it is about. */
  function fieldOf(msg) {
    const m = msg.toLowerCase();
    if (m.includes('accepted forms') || m.includes('schedule')) return 'f-schedule';
    if (m.includes('timezone')) return 'f-timezone';
    if (m.includes('script') || m.includes('no_agent') || m.includes('workdir')) return 'f-script';
    if (m.includes('prompt')) return 'f-prompt';
    if (m.includes('skill')) return 'f-skills';
    if (['overlap', 'spread', 'failure_deliver', 'max_tokens'].some((k) => m.includes(k))) return 'f-guards';
    if (m.includes('deliver')) return 'f-deliver';
    if (m.includes('repeat')) return 'f-repeat';
    if (['context_from', 'enabled_toolsets', 'provider', 'base_url', 'attach_to_session', 'model'].some((k) => m.includes(k))) return 'f-options';
    if (/\bid\b|\bname\b/.test(m)) return 'f-name';
    return 'form';
  }

  /** The Hermes run options of job `j` into the form. */
  function fillOptions(j) {
    const sets = j.enabled_toolsets || [];
    for (const o of $('f-toolsets').options) o.selected = sets.includes(o.value);
    $('f-context-from').value = (j.context_from || []).join(', ');
    $('f-model').value = j.model || '';
    $('f-provider').value = j.provider || '';
    $('f-base-url').value = j.base_url || '';
    $('f-attach').value = j.attach_to_session === true ? 'true' : j.attach_to_session === false ? 'false' : '';
    $('f-overlap').value = j.overlap === 'allow' ? 'allow' : 'skip';
    $('f-spread').value = j.spread === null || j.spread === undefined ? '' : String(j.spread);
    $('f-max-tokens').value = j.max_tokens ? String(j.max_tokens) : '';
    $('f-failure-deliver').value = (j.failure_deliver || []).join(', ');
  }

  /** The form's run options, under the jobs.json names (empty clears). */
  function optionsBody() {
    const attach = $('f-attach').value;
    return {
      enabled_toolsets: [...$('f-toolsets').selectedOptions].map((o) => o.value),
      context_from: $('f-context-from').value.split(',').map((t) => t.trim()).filter(Boolean),
      model: $('f-model').value.trim() || null,
      provider: $('f-provider').value.trim() || null,
      base_url: $('f-base-url').value.trim() || null,
      attach_to_session: attach === '' ? null : attach === 'true',
      overlap: $('f-overlap').value,
      spread: $('f-spread').value.trim() === '' ? null : Number($('f-spread').value),
      max_tokens: $('f-max-tokens').value.trim() === '' ? null : Number($('f-max-tokens').value),
      failure_deliver: $('f-failure-deliver').value.split(',').map((t) => t.trim()).filter(Boolean),
    };
  }

  async function submitForm() {
    clearErrors();
    clearTimeout(previewTimer);
    const problems = [];
    if (!$('f-schedule').value.trim()) problems.push(['f-schedule', 'Enter a schedule, for example “every 2h”.']);
    const noAgent = $('f-no-agent').checked;
    if (noAgent && !$('f-script').value) problems.push(['f-script', 'Pick the script whose output is delivered.']);
    if (!noAgent && !$('f-prompt').value.trim()) problems.push(['f-prompt', 'Enter the prompt the agent runs.']);
    const repeat = repeatValue();
    if (repeat === null) problems.push(['f-repeat', 'Repeat times must be a whole number of at least 1.']);
    if ($('f-deliver-kind').value === 'custom' && !deliverTargets().length) problems.push(['f-deliver', 'Enter at least one target.']);
    if (!problems.length) {
      const r = await preview();
      if (r && !r.ok) problems.push([r.field === 'timezone' ? 'f-timezone' : 'f-schedule', r.error || 'Invalid schedule.']);
    }
    if (problems.length) {
      for (const [f, msg] of problems) setError(f, msg);
      $(problems[0][0]).focus();
      return;
    }
    const body = {
      schedule: $('f-schedule').value.trim(),
      prompt: $('f-prompt').value.trim(),
      skills: currentSkills(),
      script: $('f-script').value || null,
      no_agent: noAgent,
      deliver: deliverTargets().join(','),
      timezone: $('f-timezone').value.trim() || null,
      ...optionsBody(),
    };
    const editing = st.editing;
    // Hermes' API needs a name: the one typed, else the start of the prompt (or the script),
    // as Hermes names a job. Names address jobs in the CLI, so a taken one is refused here.
    const name = $('f-name').value.trim() || body.prompt.slice(0, 50).trim() || body.script || '';
    if (!name) {
      setError('f-name', 'Enter a name for the task.');
      $('f-name').focus();
      return;
    }
    if (st.jobs.some((j) => j.name === name && (!editing || j.id !== editing.id))) {
      setError('f-name', `A task named “${name}” already exists; pick another name.`);
      $('f-name').focus();
      return;
    }
    body.name = name;
    const oldRepeat = editing && editing.repeat ? (editing.repeat.times || null) : undefined;
    const newRepeat = repeat === 'forever' ? null : repeat === 'once' ? 1 : repeat;
    if (!editing || oldRepeat !== newRepeat) body.repeat = newRepeat;
    if (!editing && !$('f-timezone').value.trim()) delete body.timezone;
    $('f-submit').disabled = true;
    try {
      const data = editing
        ? await api('PATCH', `api/jobs/${encodeURIComponent(editing.id)}`, body)
        : await api('POST', 'api/jobs', body);
      const job = data.job;
      st.editing = null;
      showTab('schedule');
      replaceJob(job);
      const next = parseTime(job.next_run_at);
      notice(`${editing ? 'Saved' : 'Created'} “${job.name}”${next ? ` — next run ${fmt.format(next)} (${relative(next)})` : ''}.`);
      const row = document.querySelector(`tr[data-job-id="${CSS.escape(job.id)}"] button`);
      if (row) row.focus();
    } catch (e) {
      if (e instanceof Unauthorized) return;
      const f = fieldOf(e.message);
      setError(f, e.message);
      if (f !== 'form') $(f).focus();
    } finally {
      $('f-submit').disabled = false;
    }
  }

  // ------------------------------------------------------------------ Sessions

  async function loadSessions() {
    const data = await api('GET', 'api/sessions');
    st.sessions = data.sessions || [];
    const select = $('sessions-platform');
    const keep = select.value;
    const platforms = [...new Set(st.sessions.map((s) => s.platform))].sort();
    select.replaceChildren(h('option', { value: '' }, 'All'), ...platforms.map((p) => h('option', { value: p }, p)));
    select.value = platforms.includes(keep) ? keep : '';
    renderSessions();
  }

  function renderSessions() {
    const only = $('sessions-platform').value;
    const list = st.sessions
      .filter((s) => !only || s.platform === only)
      .sort((a, b) => String(b.updated_at).localeCompare(String(a.updated_at)));
    $('sessions-empty').hidden = list.length > 0;
    $('sessions-table').hidden = list.length === 0;
    $('sessions-body').replaceChildren(...list.map((s) => {
      const who = [s.chat_type, s.user_id ? `user ${s.user_id}` : null].filter(Boolean).join(' · ');
      const btn = (action, label, cls) => h('button', { type: 'button', class: `small ${cls || ''}`.trim(), 'data-action': action, 'data-testid': `session-${action}`, 'aria-label': `${label}: ${s.platform} ${s.chat_id}` }, label);
      return h('tr', { 'data-session-key': s.session_key, 'data-session-id': s.session_id, 'data-testid': 'session-row' },
        td('Platform', h('strong', {}, s.platform)),
        td('Chat', h('code', { 'data-testid': 'session-chat' }, s.chat_id), h('span', { class: 'sub' }, who)),
        td('Last activity', timeCell(s.updated_at, 'session-updated')),
        td('Session', h('code', {}, s.session_id), s.running ? [' ', badge('running', 'running')] : null),
        td('Actions', h('div', { class: 'actions' }, btn('open', 'Transcript'), btn('reset', 'Reset', 'danger'))));
    }));
  }

  async function openTranscript(s) {
    const data = await api('GET', `api/sessions/${encodeURIComponent(s.session_id)}`);
    const rec = data.session || {};
    $('transcript-title').textContent = `Transcript — ${s.platform} ${s.chat_id}`;
    // `session` is Hermes' session object (epoch seconds); the row names the conversation.
    const started = typeof rec.started_at === 'number' ? new Date(rec.started_at * 1000) : null;
    $('transcript-meta').textContent = [`Session ${s.session_id}`, started ? `started ${fmt.format(started)}` : null,
      rec.ended_at ? `ended (${rec.end_reason || 'ended'})` : null, rec.title ? `“${rec.title}”` : null].filter(Boolean).join(' · ');
    const msgs = data.messages || [];
    $('transcript-messages').replaceChildren(...(msgs.length ? msgs.map((m) => {
      const at = parseTime(m.at);
      const calls = (m.tool_calls || []).map((c) => c.name).join(', ');
      return h('li', { class: m.role, 'data-testid': 'message', 'data-role': m.role },
        h('div', { class: 'who' }, m.role, at ? ` · ${fmt.format(at)}` : ''),
        m.content ? h('pre', {}, m.content) : null,
        calls ? h('p', { class: 'muted' }, `calls: ${calls}`) : null);
    }) : [h('li', { class: 'muted' }, 'No messages in this session.')]));
    $('transcript').hidden = false;
    $('transcript-title').focus();
  }

  async function sessionAction(action, s) {
    if (action === 'open') return openTranscript(s);
    const ok = await confirmDialog(`Start a new session for ${s.platform} ${s.chat_id}? The model forgets the conversation (the old transcript is kept), and queued messages are dropped — the same as /new.`, 'Reset');
    if (!ok) return undefined;
    const r = await api('POST', 'api/sessions/reset', { session_key: s.session_key });
    notice(`New session ${r.session_id} for ${s.platform} ${s.chat_id}${r.dropped ? ` (${r.dropped} queued dropped)` : ''}.`);
    return loadSessions();
  }

  // ------------------------------------------------------------------ Memory

  const MEMORY_STORES = ['memory', 'user'];

  /** The memory API path for the profile chosen in "Whose profile" (none: the shared one). */
  function memoryPath() {
    const user = $('m-owner').value;
    return user ? `api/memory?user=${encodeURIComponent(user)}` : 'api/memory';
  }

  function renderMemory(v) {
    for (const t of MEMORY_STORES) {
      const s = v[t] || { entries: [] };
      $(`m-${t}`).value = (s.entries || []).join('\n§\n');
      $(`m-${t}-usage`).textContent = `(${s.usage || ''}${s.enabled === false ? ', disabled' : ''})`;
    }
    // Every user with a profile of their own (per-user profiles, docs/who-sees-what.md).
    const owner = v.owner || '';
    const owners = Object.keys(v.profiles || {}).sort();
    if (owner && !owners.includes(owner)) owners.push(owner);
    $('m-owner').replaceChildren(h('option', { value: '' }, 'Shared profile'), ...owners.map((o) => h('option', { value: o }, o)));
    $('m-owner').value = owner;
    $('m-user-title').textContent = owner ? `User profile of ${owner}` : 'User profile';
    $('m-mode').textContent = v.user_profile === 'per_user'
      ? `Each user has a profile of their own (memory.user_profile: per_user); ${owners.length} so far. Chats do not use the shared one.`
      : 'One profile for everybody (memory.user_profile: shared), as in Hermes.';
  }

  async function loadMemory() { renderMemory(await api('GET', memoryPath())); }

  async function saveMemory() {
    const body = {};
    for (const t of MEMORY_STORES) {
      body[t] = $(`m-${t}`).value.split(/^[ \t]*§[ \t]*$/m).map((e) => e.trim()).filter((e) => e);
    }
    $('memory-save').disabled = true;
    try {
      renderMemory(await api('PUT', memoryPath(), body));
      notice('Memory saved.');
    } finally { $('memory-save').disabled = false; }
  }

  // ------------------------------------------------------------------ Skills

  async function loadSkillList() {
    const data = await api('GET', 'api/skills');
    const list = data.skills || [];
    $('skills-empty').hidden = list.length > 0;
    $('skills-table').hidden = list.length === 0;
    $('skills-body').replaceChildren(...list.map((k) => {
      const btn = (action, label, cls) => h('button', { type: 'button', class: `small ${cls || ''}`.trim(), 'data-action': action, 'data-name': k.name, 'data-testid': `skill-${action}`, 'aria-label': `${label}: ${k.name}` }, label);
      return h('tr', { 'data-skill': k.name, 'data-testid': 'skill-row' },
        td('Name', h('code', {}, k.name), k.title ? h('span', { class: 'sub' }, k.title) : null),
        td('Description', k.description || ''),
        td('Actions', h('div', { class: 'actions' }, btn('view', 'View'), btn('delete', 'Delete', 'danger'))));
    }));
  }

  async function skillAction(action, name) {
    if (action === 'view') {
      const v = await api('GET', `api/skills/${encodeURIComponent(name)}`);
      $('skill-view-title').textContent = `Skill — ${v.name}`;
      $('skill-view-meta').textContent = [v.source === 'store' ? 'in the store' : 'from the skills folder',
        v.category ? `category ${v.category}` : null, `files: ${(v.files || []).join(', ')}`].filter(Boolean).join(' · ');
      $('skill-view-content').textContent = v.content || '';
      $('skill-view').hidden = false;
      $('skill-view-title').focus();
      return undefined;
    }
    const ok = await confirmDialog(`Delete the skill ${name}? New sessions and jobs no longer see it (a skill from the skills folder is hidden; its folder stays).`, 'Delete');
    if (!ok) return undefined;
    await api('DELETE', `api/skills/${encodeURIComponent(name)}`);
    $('skill-view').hidden = true;
    notice(`Deleted skill ${name}.`);
    return loadSkillList();
  }

  // ------------------------------------------------------------------ Pairing

  const who = (u) => (u.user_name ? `${u.user_id} (${u.user_name})` : u.user_id);

  function renderPairing(v) {
    const pending = v.pending || [];
    const approved = v.approved || [];
    $('pairing-pending-empty').hidden = pending.length > 0;
    $('pairing-approved-empty').hidden = approved.length > 0;
    $('pairing-pending-body').replaceChildren(...pending.map((p) => h('tr', {},
      td('Platform', p.platform), td('User', who(p)), td('Asked', `${p.age_minutes} min ago`),
      td('Code hash', h('code', {}, p.code)),
      td('Actions', h('button', { type: 'button', 'data-platform': p.platform, 'data-action': 'fill' }, 'Enter code…')))));
    $('pairing-approved-body').replaceChildren(...approved.map((a) => h('tr', {},
      td('Platform', a.platform), td('User', who(a)),
      td('Actions', h('button', { type: 'button', 'data-platform': a.platform, 'data-user': a.user_id, 'data-action': 'revoke' }, 'Revoke')))));
  }

  async function loadPairing() { renderPairing(await api('GET', 'api/pairing')); }

  async function approvePairing() {
    const platform = $('p-platform').value.trim().toLowerCase();
    const code = $('p-code').value.trim();
    const err = $('pairing-error');
    err.hidden = true;
    if (!platform || !code) { err.textContent = 'Enter the platform and the code.'; err.hidden = false; return; }
    $('pairing-approve').disabled = true;
    try {
      const r = await api('POST', 'api/pairing/approve', { platform, code });
      $('p-code').value = '';
      notice(`Approved ${r.platform} user ${r.user_id}.`);
      await loadPairing();
    } finally { $('pairing-approve').disabled = false; }
  }

  async function pairingAction(b) {
    if (b.dataset.action === 'fill') {
      $('p-platform').value = b.dataset.platform;
      $('p-code').focus();
      return;
    }
    if (b.dataset.action === 'revoke') {
      await api('POST', 'api/pairing/revoke', { platform: b.dataset.platform, user_id: b.dataset.user });
      notice(`Revoked ${b.dataset.platform} user ${b.dataset.user}.`);
      await loadPairing();
    }
  }

  // ------------------------------------------------------------------ Status

  async function loadStatus() {
    const [status, usage] = await Promise.all([api('GET', 'api/status'), api('GET', 'api/usage')]);
    renderStatus(status);
    renderUsage(usage);
  }

  // The 14-day usage chart: inline SVG built here (no CDN, no library). Bars: turns and job
  // runs per day (stacked); the table under it has every counter for screen readers.
  const SVG = 'http://www.w3.org/2000/svg';
  function s(tag, attrs, ...kids) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
    for (const kid of kids.flat(Infinity)) if (kid !== null && kid !== undefined) el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    return el;
  }
  const compact = new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 1 });

  function usageChart(days) {
    const W = 560, H = 180, top = 12, bottom = 28, left = 36, right = 8;
    const max = Math.max(1, ...days.map((d) => d.turns + d.job_runs));
    const bw = (W - left - right) / days.length;
    const y = (v) => top + (H - top - bottom) * (1 - v / max);
    const bars = days.map((d, i) => {
      const x = left + i * bw + 2, w = Math.max(1, bw - 4);
      const label = `${d.day}: ${d.turns} turns, ${d.job_runs} job runs, ${d.input_tokens + d.output_tokens} tokens, ${d.store_requests} store requests`;
      return s('g', { 'data-testid': 'usage-bar', 'data-day': d.day },
        s('title', {}, label),
        s('rect', { x, y: y(d.turns), width: w, height: y(0) - y(d.turns), class: 'bar-turns' }),
        s('rect', { x, y: y(d.turns + d.job_runs), width: w, height: y(d.turns) - y(d.turns + d.job_runs), class: 'bar-runs' }),
        i % 2 === days.length % 2 ? null : s('text', { x: x + w / 2, y: H - 10, 'text-anchor': 'middle', class: 'axis' }, d.day.slice(5)));
    });
    return s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'Turns and job runs per day, last 14 days', class: 'chart', 'data-testid': 'usage-chart' },
      s('line', { x1: left, x2: W - right, y1: y(0), y2: y(0), class: 'axis-line' }),
      s('text', { x: left - 4, y: y(max) + 4, 'text-anchor': 'end', class: 'axis' }, compact.format(max)),
      s('text', { x: left - 4, y: y(0), 'text-anchor': 'end', class: 'axis' }, '0'),
      bars);
  }

  const n = (count, word) => `${count} ${word}${count === 1 ? '' : 's'}`;

  function renderUsage(v) {
    const days = v.days || [];
    const sum = (k) => days.reduce((a, d) => a + (d[k] || 0), 0);
    const e = v.estimate || {};
    const usd = (x) => `$${Number(x || 0).toFixed(x >= 1 ? 2 : 4)}`;
    const table = h('table', { class: 'usage-table', 'data-testid': 'usage-table' },
      h('thead', {}, h('tr', {}, ['Day', 'Turns', 'Job runs', 'Tokens', 'Store requests'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, days.slice().reverse().map((d) => h('tr', {},
        h('td', {}, d.day), h('td', {}, d.turns), h('td', {}, d.job_runs), h('td', {}, compact.format(d.input_tokens + d.output_tokens)), h('td', {}, d.store_requests)))));
    $('usage').replaceChildren(
      h('p', { class: 'legend' }, h('span', { class: 'swatch turns' }), ' turns ', h('span', { class: 'swatch runs' }), ' job runs'),
      usageChart(days),
      h('p', { 'data-testid': 'usage-totals' }, `14 days: ${n(sum('turns'), 'turn')}, ${n(sum('job_runs'), 'job run')}, ${compact.format(sum('input_tokens') + sum('output_tokens'))} tokens, ${n(sum('store_requests'), 'store request')}.`),
      h('p', { 'data-testid': 'usage-estimate' }, h('strong', {}, `Estimated cost: ${usd(e.total_usd_per_month)} / month`),
        ` (compute ${usd(e.lambda_usd_per_month)}, store ${usd(e.store_usd_per_month)}, model ${usd(e.model_usd_per_month)})`, h('span', { class: 'sub' }, e.basis || '')),
      budgetLine(v.budget || {}, usd),
      h('details', {}, h('summary', {}, 'Per day'), table));
  }

  /** Today's job spend against cron.daily_budget_usd, and the jobs' max_tokens. */
  function budgetLine(b, usd) {
    const limit = b.daily_budget_usd ? ` of ${usd(b.daily_budget_usd)} (${usd(b.left_usd)} left)` : ' (no daily budget: cron.daily_budget_usd)';
    const caps = (b.max_tokens || []).map((j) => `${j.name} ≤ ${compact.format(j.max_tokens)} tokens a run`);
    const price = b.model_price ? '' : ` — ${b.model || 'the model'} has no price: set pricing.<model>`;
    return h('p', { 'data-testid': 'usage-budget' }, h('strong', {}, `Jobs today (${b.day || 'UTC'}): ${usd(b.job_spend_usd)}${limit}`),
      `; chats ${usd(b.chat_spend_usd)}${price}`, caps.length ? h('span', { class: 'sub' }, caps.join(' · ')) : null);
  }

  function renderStatus(v) {
    const rows = [];
    const add = (term, testid, ...dd) => rows.push(h('dt', {}, term), h('dd', { 'data-testid': testid }, ...dd));
    add('Timer provider', 'status-provider', h('strong', {}, v.provider), v.configured_choice && v.configured_choice !== v.provider ? ` (configured: ${v.configured_choice})` : '');
    add('Why', 'status-why', v.why || '—', v.missing && v.missing.length ? h('span', { class: 'sub' }, `missing: ${v.missing.join(', ')}`) : null);
    add('Last tick', 'status-last-tick', v.last_tick ? timeCell(v.last_tick, 'status-last-tick-time') : 'never (no ticker pass recorded yet)');
    add('Last timer error', 'status-timer-error', v.last_timer_error || 'none');
    const armed = v.armed || [];
    add('Armed timers', 'status-armed', `${armed.length}`, armed.length
      ? h('ul', {}, armed.map((a) => { const d = parseTime(a.fire_at); return h('li', {}, h('code', {}, a.job_id), ' — ', d ? `${fmt.format(d)} (${relative(d)})` : String(a.fire_at)); }))
      : null);
    add('Jobs', 'status-jobs', String(v.jobs ?? 0));
    const mcp = v.mcp || [];
    add('MCP servers', 'status-mcp', `${mcp.length}`, mcp.length
      ? h('ul', {}, mcp.map((m) => h('li', {}, h('code', {}, m.name), ` (${m.transport}) — ${m.state}, ${m.tool_count} tools${m.cached_at ? `, listed ${m.cached_at}` : ''}`)))
      : null);
    add('Store', 'status-store', v.store || '—');
    add('Gateway timezone', 'status-timezone', v.timezone || 'UTC');
    add('Version', 'status-version', v.version || '—');
    $('status-list').replaceChildren(...rows);
  }

  // ------------------------------------------------------------------ wiring

  function init() {
    $('browser-tz').textContent = tzName;
    $('login-form').addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const key = $('login-key').value.trim();
      if (!key) { setError('login-key', 'Enter the API key.'); return; }
      setError('login-key', '');
      $('login-submit').disabled = true;
      try { await signIn(key); } catch (e) { if (!(e instanceof Unauthorized)) { st.key = ''; setError('login-key', e.message); } } finally { $('login-submit').disabled = false; }
    });
    $('logout').addEventListener('click', () => signOut(''));
    for (const t of TABS) $(`tab-${t}`).addEventListener('click', () => { if (t === 'create') resetForm(); showTab(t); });
    window.addEventListener('hashchange', () => { const t = location.hash.slice(1); if (TABS.includes(t) && t !== st.tab) showTab(t); });
    $('new-job').addEventListener('click', () => { resetForm(); showTab('create'); $('f-schedule').focus(); });
    $('jobs-refresh').addEventListener('click', () => guard(loadJobs));
    $('jobs-body').addEventListener('click', (ev) => {
      const b = ev.target.closest('button[data-action]');
      const tr = b && b.closest('tr[data-job-id]');
      const job = tr && st.jobs.find((j) => j.id === tr.dataset.jobId);
      if (job) guard(() => jobAction(b.dataset.action, job, b));
    });
    $('job-form').addEventListener('submit', (ev) => { ev.preventDefault(); submitForm(); });
    $('f-cancel').addEventListener('click', () => { resetForm(); showTab('schedule'); });
    $('f-schedule').addEventListener('input', schedulePreviewSoon);
    $('f-timezone').addEventListener('input', schedulePreviewSoon);
    $('f-deliver-kind').addEventListener('change', showDeliverKind);
    $('f-repeat').addEventListener('change', showRepeat);
    $('sessions-refresh').addEventListener('click', () => guard(loadSessions));
    $('sessions-platform').addEventListener('change', renderSessions);
    $('sessions-body').addEventListener('click', (ev) => {
      const b = ev.target.closest('button[data-action]');
      const tr = b && b.closest('tr[data-session-key]');
      const s = tr && st.sessions.find((x) => x.session_key === tr.dataset.sessionKey);
      if (s) guard(() => sessionAction(b.dataset.action, s));
    });
    $('transcript-close').addEventListener('click', () => {
      $('transcript').hidden = true;
      const b = document.querySelector('#sessions-body button');
      if (b) b.focus();
    });
    $('memory-refresh').addEventListener('click', () => guard(loadMemory));
    $('m-owner').addEventListener('change', () => guard(loadMemory));
    $('memory-form').addEventListener('submit', (ev) => { ev.preventDefault(); guard(saveMemory); });
    $('skills-refresh').addEventListener('click', () => guard(loadSkillList));
    $('skills-body').addEventListener('click', (ev) => {
      const b = ev.target.closest('button[data-action]');
      if (b) guard(() => skillAction(b.dataset.action, b.dataset.name));
    });
    $('skill-view-close').addEventListener('click', () => { $('skill-view').hidden = true; });
    $('pairing-refresh').addEventListener('click', () => guard(loadPairing));
    $('pairing-form').addEventListener('submit', (ev) => { ev.preventDefault(); guard(approvePairing); });
    for (const id of ['pairing-pending-body', 'pairing-approved-body']) {
      $(id).addEventListener('click', (ev) => {
        const b = ev.target.closest('button[data-action]');
        if (b) guard(() => pairingAction(b));
      });
    }
    $('status-refresh').addEventListener('click', () => guard(loadStatus));
    setInterval(refreshRelative, 30000);
    if (st.key) guard(() => signIn(st.key)); else signOut('');
  }

  init();
})();
