/*
 * dashboard.test.js - the dashboard in headless Chromium (Debian's /usr/bin/chromium, driven
 * by playwright-core), against a real server loaded by deploy/demo.sh (tests/browser/run.py
 * starts both). What it checks, each against the API's own answers:
 *   - the token is asked for once and kept (a reload does not ask again);
 *   - the issue list shows the open issues the API lists, with the demo's crash sites, and
 *     a 30-day sparkline per row whose bars add up to the issue's count;
 *   - filtering (search, kind) and sorting (by count) change the rows as the API does;
 *   - an issue opens and shows its symbolicated sample stack: in-app frames highlighted,
 *     file:line, inlined frames marked; breakdowns add up; the status control (admin token
 *     asked for on 403) changes the status;
 *   - the report page shows raw and symbolicated text side by side;
 *   - the missing-dSYMs page lists the UUID the demo held back;
 *   - the Privacy APIs view (reached from the issue list's header) shows the API's call sites
 *     per API tag with their counts and devices, highlights the ones new in the latest build
 *     (and filters to them), and opens a call site's symbolicated stack with in-app frames;
 *   - the Releases view lists the releases the API lists, with the same sessions, crash-free
 *     sessions and users and adoption, trend lines, a release's page; an issue page lists
 *     the releases of its versions;
 *   - charts can be read: the issue page's daily chart has a count axis, dates under the bars
 *     and each day's count on hover; the releases chart has a percent axis, release labels and
 *     each point's value on hover, a release's daily chart dates; every chart (sparklines
 *     too) has a text equivalent for screen readers that says what the API says;
 *   - no request leaves the server's origin, and the page logs no error.
 * Screenshots go to $ARTIFACT_DIR (dashboard-readme.png is the README's, docs/images/); their
 * paths are printed. Ends with "N passed, N failed".
 *
 * Env: STACKSIFT_URL, READ_TOKEN, ADMIN_TOKEN, INGEST_TOKEN, ARTIFACT_DIR, MISSING_UUID, SAMPLE_REPORT.
 */
'use strict';
const { chromium } = require('playwright-core');
const fs = require('fs');
const path = require('path');

const BASE = process.env.STACKSIFT_URL;
const READ = process.env.READ_TOKEN;
const ADMIN = process.env.ADMIN_TOKEN;
const ARTIFACTS = process.env.ARTIFACT_DIR;
const MISSING_UUID = process.env.MISSING_UUID;
const SAMPLE_REPORT = process.env.SAMPLE_REPORT;   // a real macOS `sample` report (a hang)
const STEP_TIMEOUT_MS = 15000;

let passed = 0;
let failed = 0;
function check(cond, what) {
  if (cond) passed++;
  else { failed++; console.error('FAIL: ' + what); }
  return cond;
}

async function api(p) {
  const r = await fetch(BASE + p, { headers: { Authorization: 'Bearer ' + READ } });
  if (!r.ok) throw new Error(`${p}: ${r.status} ${await r.text()}`);
  return r.json();
}

// Rows of the issue table as {id, title, count, spark: [counts]}.
async function listedIssues(page) {
  return page.$$eval('#issues tbody tr', rows => rows.map(tr => ({
    id: Number(tr.getAttribute('data-issue')),
    title: tr.querySelector('.issue-title').textContent,
    count: Number(tr.children[1].textContent),
    kindTags: Array.from(tr.querySelectorAll('.tag')).map(t => t.textContent),
    spark: Array.from(tr.querySelectorAll('td.spark rect title')).map(t => Number(t.textContent.split(': ').pop())),
  })));
}

// Wait until the rows answer the filters in the URL (the page marks #list-info with them).
async function listSettled(page) {
  await page.waitForFunction(() => {
    const i = document.querySelector('#list-info');
    return i && i.getAttribute('data-loaded') === location.hash;
  }, null, { timeout: STEP_TIMEOUT_MS });
}

async function main() {
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_TIMEOUT_MS);
  const foreign = [];
  const problems = [];
  page.on('request', r => { if (!r.url().startsWith(BASE + '/')) foreign.push(r.url()); });
  page.on('pageerror', e => problems.push('pageerror: ' + e.message));
  // The read token's PATCH is refused on purpose (403): the only error the page may log.
  page.on('console', m => {
    if (m.type() === 'error' && !/status of 403/.test(m.text())) problems.push('console: ' + m.text());
  });
  const shots = [];
  async function shot(name, opts) {
    const file = path.join(ARTIFACTS, `dashboard-${name}.png`);
    await page.screenshot(Object.assign({ path: file }, opts || {}));
    shots.push(file);
  }

  try {
    // ---- token, asked for once --------------------------------------------------------
    const t0 = Date.now();
    await page.goto(BASE + '/');
    await page.waitForSelector('#token-form');
    check(true, 'token form shown on first visit');
    await page.fill('#token-form input[name=token]', READ);
    await page.click('#token-form button[type=submit]');
    await page.waitForSelector('#issues tbody tr');
    await listSettled(page);
    console.log(`list shown ${Date.now() - t0} ms after the first page load`);
    await page.reload();
    await page.waitForSelector('#issues tbody tr');
    check(await page.$('#token-form') === null, 'a reload does not ask for the token again');
    check(await page.evaluate(() => localStorage.getItem('stacksift.token')) === READ, 'token kept in localStorage');
    await listSettled(page);

    // ---- the list: what the API lists ---------------------------------------------------
    const expected = await api('/api/v1/issues?status=open&limit=50');
    let rows = await listedIssues(page);
    check(rows.length === expected.issues.length, `list shows ${rows.length} rows, API lists ${expected.issues.length}`);
    check(JSON.stringify(rows.map(r => r.id)) === JSON.stringify(expected.issues.map(i => i.id)),
          'rows are the API\'s open issues, in last_seen order');
    await page.waitForSelector('#issues td.spark rect');
    await page.waitForFunction(() => document.querySelectorAll('#issues td.spark rect').length >=
                               30 * document.querySelectorAll('#issues tbody tr').length);
    rows = await listedIssues(page);
    check(rows.every(r => r.spark.length === 30), 'every row has a 30-day sparkline');
    check(rows.every(r => r.spark.reduce((a, b) => a + b, 0) === r.count), 'sparkline bars add up to each count');
    const sparkLabels = await page.$$eval('#issues tbody tr', trs => trs.map(tr =>
      (tr.querySelector('td.spark svg') || { getAttribute: () => '' }).getAttribute('aria-label')));
    check(rows.every((r, i) => (sparkLabels[i] || '').includes(`: ${r.count} report${r.count === 1 ? '' : 's'} in the last 30 days`)),
          `every sparkline says its total to screen readers (${sparkLabels[0]})`);
    // The next page (keyset cursor) by "Load more".
    const all = await api('/api/v1/issues?status=open&limit=200');
    if (expected.next_cursor) {
      await page.click('#load-more');
      await page.waitForFunction(n => document.querySelectorAll('#issues tbody tr').length > n, rows.length);
      await listSettled(page);
      rows = await listedIssues(page);
    }
    check(rows.length === Math.min(all.issues.length, 100), `after "Load more": ${rows.length} rows of ${all.issues.length}`);
    for (const site of ['crashsite::deref_null', '-[FXWorker runTask:]', 'crashsite::trap_now',
                        'calc_factorial', 'calc_fib', 'fx_clamp']) {
      check(rows.some(r => r.title.includes(site)), `the demo crash site ${site} is listed`);
    }
    await page.evaluate(() => window.scrollTo(0, 0));
    await shot('list');

    // ---- filters and sorting ------------------------------------------------------------
    await page.fill('#filters input[name=q]', 'deref_null');
    await page.waitForFunction(() => /q=deref_null/.test(location.hash));
    await listSettled(page);
    rows = await listedIssues(page);
    const apiQ = await api('/api/v1/issues?status=open&q=deref_null');
    check(rows.length >= 1 && rows.length === apiQ.issues.length, `search deref_null: ${rows.length} rows`);
    check(rows.every(r => r.title.includes('deref_null')), 'search keeps only matching issues');

    await page.fill('#filters input[name=q]', '');
    await page.waitForFunction(() => !/q=/.test(location.hash));
    await listSettled(page);
    await page.selectOption('#filters select[name=kind]', 'hang');
    await page.waitForFunction(() => /kind=hang/.test(location.hash));
    await listSettled(page);
    rows = await listedIssues(page);
    const apiHang = await api('/api/v1/issues?status=open&kind=hang');
    check(rows.length === apiHang.issues.length && rows.length >= 2, `kind=hang: ${rows.length} rows`);
    check(rows.every(r => r.kindTags.includes('hang')), 'kind filter keeps only hangs');
    check(rows.some(r => r.title.includes('calc_fib')), 'the calc_fib hang is listed');

    await page.selectOption('#filters select[name=kind]', '');
    await page.waitForFunction(() => !/kind=/.test(location.hash));
    await listSettled(page);
    // the project selector: its options come from GET /api/v1/projects; the demo's reports
    // went to the default project (but its Bugsnag event): the same rows as the API gives for it
    await page.waitForSelector('#filters select[name=project] option[value=default]',
                               { state: 'attached', timeout: STEP_TIMEOUT_MS });
    await page.selectOption('#filters select[name=project]', 'default');
    await page.waitForFunction(() => /project=default/.test(location.hash));
    await listSettled(page);
    rows = await listedIssues(page);
    const apiProject = await api('/api/v1/issues?status=open&project=default');
    check(rows.length >= 1 && rows.length === apiProject.issues.length, `project=default: ${rows.length} rows`);
    await page.selectOption('#filters select[name=project]', '');
    await page.waitForFunction(() => !/project=/.test(location.hash));
    await listSettled(page);
    await page.click('#issues th.sortable:has-text("Count")');
    await page.waitForFunction(() => /sort=count/.test(location.hash));
    await listSettled(page);
    rows = await listedIssues(page);
    const byCount = await api('/api/v1/issues?status=open&sort=count&limit=50');
    check(JSON.stringify(rows.map(r => r.id)) === JSON.stringify(byCount.issues.map(i => i.id)),
          'sorting by count orders rows as the API does');
    check(rows.every((r, i) => i === 0 || rows[i - 1].count >= r.count), 'counts descend');
    await shot('readme', { clip: { x: 0, y: 0, width: 1400, height: 700 } });

    // ---- an issue with inlined frames: stack, breakdowns ---------------------------------
    const target = rows.find(r => r.title.includes('calc_factorial'));
    check(!!target, 'calc_factorial issue found');
    const issue = await api('/api/v1/issues/' + target.id);
    await page.click(`#issues tr[data-issue="${target.id}"] a.issue-title`);
    await page.waitForSelector('#issue-title');
    await page.waitForSelector('#sample table.stack');
    check((await page.textContent('#issue-title')) === issue.title, 'issue page title');
    const frames = await page.$$eval('#sample table.stack tr', trs => trs.map(tr => ({
      inApp: tr.classList.contains('in-app'), inlined: tr.classList.contains('inlined'),
      fn: tr.querySelector('.fn').textContent, loc: tr.querySelector('.loc').textContent,
      img: tr.querySelector('.img').textContent })));
    const top = frames.find(f => f.fn.includes('calc_factorial'));
    check(!!top && top.inApp && /^calc\.c:\d+$/.test(top.loc), `calc_factorial frame in-app with file:line (${top && top.loc})`);
    check(frames.filter(f => f.inApp).length >= 3, 'several in-app frames highlighted');
    check(frames.some(f => !f.inApp && f.img.includes('CoreFoundation')), 'system frames are not highlighted');
    const sample = issue.latest_sample.report;
    const sampleInlined = JSON.stringify(sample).includes('"inlined":true');
    if (sampleInlined) check(frames.some(f => f.inlined && /inlined/.test(f.fn)), 'inlined frames are shown and marked');
    else check(frames.filter(f => f.fn.includes('calc_factorial') || f.fn.includes('apply')).length >= 2,
               'an -O0 sample shows each function as its own frame');
    for (const title of ['App version', 'OS version', 'Device']) {
      const sum = await page.$eval(`[data-breakdown="${title}"]`, el =>
        Array.from(el.querySelectorAll('.num')).reduce((a, n) => a + Number(n.textContent), 0));
      check(sum === issue.count, `${title} breakdown adds up to ${issue.count} (got ${sum})`);
    }
    // the daily chart: dates under the bars, a count axis, each day's count on hover, and the
    // same numbers as a table for screen readers, all as the API's `daily` says
    {
      const days = issue.daily.map(d => d.day);
      const counts = issue.daily.map(d => d.count);
      const noun = c => c + (c === 1 ? ' report' : ' reports');
      const chart = await page.$eval('#daily-chart', fig => ({
        label: fig.querySelector('svg').getAttribute('aria-label'),
        role: fig.querySelector('svg').getAttribute('role'),
        xDays: Array.from(fig.querySelectorAll('.axis-x text[data-day]')).map(t => [t.getAttribute('data-day'), t.textContent]),
        yText: Array.from(fig.querySelectorAll('.axis-y text')).map(t => t.textContent),
        hovers: Array.from(fig.querySelectorAll('rect.hit title')).map(t => t.textContent),
        table: Array.from(fig.querySelectorAll('table.sr-only tbody tr')).map(tr =>
          Array.from(tr.children).map(c => c.textContent)),
        tableHidden: getComputedStyle(fig.querySelector('table.sr-only')).clip,
        width: fig.querySelector('svg').getBoundingClientRect().width,
      }));
      const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
      const short = d => months[Number(d.slice(5, 7)) - 1] + ' ' + Number(d.slice(8, 10));
      check(days.length === 30, `the API gives 30 days (${days.length})`);
      check(chart.xDays.length >= 4 && chart.xDays.every(([d, text]) => days.includes(d) && text === short(d)) &&
            chart.xDays[chart.xDays.length - 1][0] === days[days.length - 1],
            `dates under the daily chart, ending on the last day (${JSON.stringify(chart.xDays)})`);
      check(chart.yText.includes('0') && chart.yText.includes(String(Math.max(...counts))) && chart.yText.includes('reports'),
            `the daily chart's count axis (${chart.yText})`);
      check(JSON.stringify(chart.hovers) === JSON.stringify(days.map((d, i) => `${d}: ${noun(counts[i])}`)),
            'each day\'s count on hover');
      check(JSON.stringify(chart.table) === JSON.stringify(days.map((d, i) => [d, String(counts[i])])),
            'the daily chart\'s table for screen readers gives every day and count');
      check(chart.role === 'img' && chart.label.includes(days[0]) && chart.label.includes(days[days.length - 1]) &&
            chart.label.includes(noun(issue.count)), `the daily chart's label (${chart.label})`);
      check(chart.width > 300, `the daily chart is drawn (${chart.width} px wide)`);
    }
    await shot('issue', { fullPage: true });

    // An -O2 sample (inlined frames) must exist among this issue's reports: open one.
    const reps = await api(`/api/v1/issues/${target.id}/reports?limit=50`);
    let inlinedReport = null;
    for (const r of reps.reports) {
      const full = await api('/api/v1/reports/' + r.id);
      if (JSON.stringify(full.symbolicated).includes('"inlined":true')) { inlinedReport = full; break; }
    }
    check(!!inlinedReport, 'the issue groups -O2 reports whose frames were inlined');

    // ---- status control: needs the admin scope ------------------------------------------
    await page.selectOption('#status-select', 'resolved');
    await page.fill('#resolved-in', '9.9');
    await page.click('#status-save');
    await page.waitForSelector('#admin-token:not([hidden])');
    check(/admin scope/.test(await page.textContent('#status-msg')), 'the read token is refused: admin token asked for');
    await page.fill('#admin-token', ADMIN);
    await page.click('#status-save');
    await page.waitForFunction(() => /status: resolved/.test(document.querySelector('#status-msg').textContent));
    const after = await api('/api/v1/issues/' + target.id);
    check(after.status === 'resolved' && after.resolved_in === '9.9', 'status saved through the API');

    // ---- report page: raw and symbolicated side by side ------------------------------------
    await page.goto(`${BASE}/#/reports/${inlinedReport ? inlinedReport.id : issue.latest_sample.id}`);
    await page.waitForFunction(() => {
      const a = document.querySelector('#raw-text'), b = document.querySelector('#symbolicated-text');
      return a && b && a.textContent !== 'Loading…' && b.textContent !== 'Loading…';
    });
    const raw = await page.textContent('#raw-text');
    const sym = await page.textContent('#symbolicated-text');
    check(/FixtureApp\s+0x[0-9a-f]+ 0x[0-9a-f]+ \+ \d+/.test(raw), 'raw text has unsymbolicated app frames');
    check(!raw.includes('calc_factorial'), 'raw text has no function names of the app');
    check(/calc_factorial \(calc\.c:\d+\)/.test(sym), 'symbolicated text names calc_factorial with file:line');
    const boxes = await page.$$eval('.side > div', ds => ds.map(d => d.getBoundingClientRect()).map(r => [r.left, r.top, r.width]));
    check(boxes.length === 2 && boxes[1][0] > boxes[0][0] + boxes[0][2] - 1 && Math.abs(boxes[0][1] - boxes[1][1]) < 2,
          'raw and symbolicated are side by side');
    await shot('report');

    // ---- missing dSYMs --------------------------------------------------------------------
    await page.click('header nav a[data-nav=dsyms]');
    await page.waitForSelector('#missing tbody tr');
    const missing = await page.$$eval('#missing tbody tr td:first-child', tds => tds.map(t => t.textContent));
    const apiMissing = await api('/api/v1/dsyms/missing?limit=1000');
    check(missing.length === apiMissing.missing.length, `missing dSYMs: ${missing.length} rows`);
    check(missing.includes(MISSING_UUID), `the held-back FixtureD5 UUID ${MISSING_UUID} is listed`);
    // what each UUID is missing, as the API's `needs` says ("debug info", "unwind info")
    const needs = await page.$$eval('#missing tbody tr td.needs', tds => tds.map(t => t.textContent));
    check(needs.length === apiMissing.missing.length &&
          apiMissing.missing.every((m, i) => needs[i] === m.needs.map(k => k.replace('_', ' ')).join(', ')),
          `missing dSYMs: needs ${JSON.stringify(needs)} vs the API's`);
    await shot('missing');

    // ---- privacy-API call sites ------------------------------------------------------------
    async function privacySettled() {
      await page.waitForFunction(() => {
        const i = document.querySelector('#privacy-info');
        return i && i.getAttribute('data-loaded') === location.hash;
      }, null, { timeout: STEP_TIMEOUT_MS });
    }
    async function shownCallsites() {
      return page.$$eval('tr.callsite', trs => trs.map(tr => ({
        id: Number(tr.getAttribute('data-callsite')),
        tag: tr.closest('section.api').getAttribute('data-tag'),
        count: Number(tr.children[1].textContent),
        devices: Number(tr.children[2].textContent),
        isNew: tr.classList.contains('new'),
      })));
    }
    await page.click('header nav a[data-nav=issues]');
    await page.waitForSelector('#privacy-link');
    await page.click('#privacy-link');
    await page.waitForFunction(() => location.hash === '#/privacy');
    await privacySettled();
    const cs = (await api('/api/v1/callsites?limit=1000')).callsites;
    let shown = await shownCallsites();
    check(cs.length >= 8 && shown.length === cs.length, `Privacy APIs: ${shown.length} call sites shown, API lists ${cs.length}`);
    check(cs.every(c => shown.some(r => r.id === c.id && r.tag === c.tag && r.count === c.count && r.devices === c.devices)),
          'each call site under its API with the API\'s count and devices');
    const tagsShown = await page.$$eval('section.api', ss => ss.map(s => s.getAttribute('data-tag')));
    check(tagsShown.includes('CLLocationManager.requestLocation') && tagsShown.includes('UIPasteboard.string'),
          `one section per API (${tagsShown.join(', ')})`);
    const latest = cs.flatMap(c => c.builds).sort((a, b) => Number(a) - Number(b)).pop();
    const fresh = (await api('/api/v1/callsites?limit=1000&new_in_build=' + latest)).callsites;
    check(fresh.length >= 1, `the demo has call sites new in build ${latest}`);
    check(JSON.stringify(shown.filter(r => r.isNew).map(r => r.id).sort()) === JSON.stringify(fresh.map(c => c.id).sort()),
          `exactly the call sites new in ${latest} are highlighted`);
    await shot('privacy');
    // a call site's stack: the API frame first, then in-app frames with file:line
    const first = shown[0];
    await page.click(`tr.callsite[data-callsite="${first.id}"]`);
    const stack = await page.$$eval(`tr.callsite[data-callsite="${first.id}"] + tr.stack-row tr`, trs => trs.map(tr => ({
      inApp: tr.classList.contains('in-app'), img: tr.children[1].textContent,
      fn: tr.children[2].textContent, loc: tr.children[3].textContent })));
    check(stack.length >= 2 && !stack[0].inApp, `the stack starts in the API's framework (${stack[0] && stack[0].img})`);
    check(stack.some(f => f.inApp && f.img === 'FixtureApp' && /:\d+$/.test(f.loc)), 'in-app frames with file:line');
    // build + only new: the filters in the URL, the rows the API's new_in_build answers
    await page.selectOption('#privacy-filters select[name=build]', latest);
    await page.waitForFunction(b => location.hash.includes('build=' + b), latest);
    await privacySettled();
    await page.check('#only-new');
    await page.waitForFunction(() => /new=1/.test(location.hash));
    await privacySettled();
    shown = await shownCallsites();
    check(JSON.stringify(shown.map(r => r.id).sort()) === JSON.stringify(fresh.map(c => c.id).sort()),
          `only new: the ${fresh.length} call sites new in ${latest}`);
    await shot('privacy-new');

    // ---- a hang (real macOS `sample` report): hang duration, main thread call graph --------
    if (SAMPLE_REPORT) {
      const posted = await fetch(BASE + '/api/v1/reports', { method: 'POST',
        headers: { Authorization: 'Bearer ' + process.env.INGEST_TOKEN, 'Content-Type': 'text/plain' },
        body: fs.readFileSync(SAMPLE_REPORT) });
      check(posted.status === 202, `sample report accepted (${posted.status})`);
      const rid = (await posted.json()).id;
      let rep = null;
      for (let t0 = Date.now(); Date.now() - t0 < STEP_TIMEOUT_MS; await new Promise(r => setTimeout(r, 200))) {
        rep = await api('/api/v1/reports/' + rid);
        if (rep.issue_id) break;
      }
      check(!!(rep && rep.issue_id), 'the sample report is grouped into an issue');
      const hang = await api('/api/v1/issues/' + rep.issue_id);
      await page.evaluate(id => { location.hash = '#/issues/' + id; }, rep.issue_id);
      await page.waitForSelector('#call-graph tr');
      const graph = await page.$$eval('#call-graph tr', trs => trs.map(tr => ({
        depth: Number(tr.getAttribute('data-depth')), count: Number(tr.children[0].textContent) })));
      check(graph.length >= 3 && graph[0].depth === 0, `call graph rows (${graph.length})`);
      check(graph.every((r, i) => i === 0 || r.depth <= graph[i - 1].depth + 1), 'callees indented under their caller');
      // heaviest path first: the first rows descend one level each, each the heaviest callee
      let k = 0;
      while (k + 1 < graph.length && graph[k + 1].depth === graph[k].depth + 1) k++;
      check(k >= 2 && graph.slice(0, k + 1).every((r, i) => i === 0 || r.count <= graph[i - 1].count),
            `heaviest path first (${k + 1} levels)`);
      const hd = hang.hang_duration_ms;
      check(hd && hd.max === 3000 && (await page.textContent('#hang-duration')).includes('max 3000 ms'),
            'hang duration shown');
      // the sample stack describes a hang, not a crash: the main thread and how long it hung
      const label = await page.textContent('#stack-label');
      check(/^Main thread during the hang/.test(label) && !/crashed/.test(label),
            `hang stack label (${label})`);
      check((await page.textContent('#hang-detail')).includes('3000 ms'), 'the hang\'s duration beside its stack');
      // the sample's report id: its random tail (UUIDv7 ids of the same minute share their head)
      const sid = hang.latest_sample.id;
      const link = await page.$eval(`#sample-report`, a => ({ text: a.textContent, title: a.title }));
      check(link.title === sid && link.text === '…' + sid.replace(/-/g, '').slice(-8),
            `sample report id shown by its random tail (${link.text} for ${sid})`);
      await shot('hang', { fullPage: true });
    }

    // ---- Releases: sessions of two builds, the view against the API's answers ------------
    {
      const now = Date.now();
      const sessions = [];
      // 1.0: 40 sessions, 6 crashed (on 3 devices); 2.0: 30 sessions, 1 crashed, 2 abnormal
      for (let i = 0; i < 70; i++) {
        const v = i < 40 ? '1.0+1' : '2.0+2';
        const k = i < 40 ? i : i - 40;
        const status = i < 40 ? (k < 6 ? 'crashed' : 'exited') : (k < 1 ? 'crashed' : k < 3 ? 'abnormal' : 'exited');
        sessions.push({ sid: 'browser-' + i, did: 'device-' + (k % 10), release: 'com.stacksift.FixtureApp@' + v,
                        started: new Date(now - (i + 1) * 60000).toISOString(), duration_s: 5, status, errors: 0 });
      }
      const posted = await fetch(BASE + '/api/v1/sessions', { method: 'POST',
        headers: { Authorization: 'Bearer ' + process.env.INGEST_TOKEN, 'Content-Type': 'application/json' },
        body: JSON.stringify({ sessions }) });
      check(posted.status === 202, `sessions accepted (${posted.status})`);
      const rel = (await api('/api/v1/releases')).releases;
      check(rel.length === 2, `two releases (${rel.length})`);
      await page.click('header nav a[data-nav=releases]');
      await page.waitForSelector('#releases tbody tr');
      const rows = await page.$$eval('#releases tbody tr', trs => trs.map(tr => ({
        release: tr.getAttribute('data-release'), sessions: Number(tr.children[1].textContent),
        cfs: tr.querySelector('.cfs').textContent, cfu: tr.querySelector('.cfu').textContent,
        adoption: tr.querySelector('.adoption').textContent })));
      const pct = x => (x === 1 ? '100' : (100 * x).toFixed(2)) + '%';
      check(JSON.stringify(rows.map(r => r.release)) === JSON.stringify(rel.map(r => r.release)),
            'the releases the API lists, newest first');
      for (const r of rel) {
        const row = rows.find(x => x.release === r.release) || {};
        check(row.sessions === r.sessions && row.cfs === pct(r.crash_free_sessions) &&
              row.cfu === pct(r.crash_free_users) && row.adoption === pct(r.adoption),
              `${r.release}: ${JSON.stringify(row)} shows ${JSON.stringify(r)}`);
      }
      const r1 = rel.find(r => r.release.endsWith('@1.0+1')) || {};
      check(r1.sessions === 40 && r1.crashed === 6 && r1.crash_free_sessions === 34 / 40,
            `1.0 counted exactly (${r1.sessions}, ${r1.crashed}, ${r1.crash_free_sessions})`);
      check((await page.$$('#release-trend svg.trend polyline')).length === 2, 'trend lines drawn');
      // the chart can be read: a percent axis, the releases under it (oldest first), each point's
      // release, series and value on hover, and a table of the same for screen readers
      {
        const chart = await page.$eval('#release-trend figure', fig => ({
          yText: Array.from(fig.querySelectorAll('.axis-y text:not(.axis-title)')).map(t => t.textContent),
          titles: Array.from(fig.querySelectorAll('.axis-title')).map(t => t.textContent),
          xLabels: Array.from(fig.querySelectorAll('.axis-x text[data-label]')).map(t => [t.getAttribute('data-label'), t.textContent]),
          hovers: Array.from(fig.querySelectorAll('circle title')).map(t => t.textContent),
          table: Array.from(fig.querySelectorAll('table.sr-only tbody tr')).map(tr =>
            Array.from(tr.children).map(c => c.textContent)),
          label: fig.querySelector('svg').getAttribute('aria-label'),
        }));
        const oldest = rel.slice().reverse();
        check(chart.yText.length >= 2 && chart.yText.every(s => /^\d+(\.\d)?%$/.test(s)) && chart.yText.includes('100%'),
              `the releases chart's percent axis (${chart.yText})`);
        check(chart.titles.includes('crash-free') && chart.titles.includes('Release'), `axis titles (${chart.titles})`);
        const label = r => { const m = /@([^+]*)(?:\+(.*))?$/.exec(r); return m[1] + (m[2] ? ` (${m[2]})` : ''); };
        check(JSON.stringify(chart.xLabels) === JSON.stringify(oldest.map(r => [r.release, label(r.release)])),
              `release labels under the chart (${JSON.stringify(chart.xLabels)})`);
        const hovers = [];
        for (const [name, key] of [['sessions', 'crash_free_sessions'], ['users', 'crash_free_users']])
          for (const r of oldest) hovers.push(`${r.release}: crash-free ${name} ${pct(r[key])}`);
        check(JSON.stringify(chart.hovers) === JSON.stringify(hovers), `values on hover (${chart.hovers})`);
        check(JSON.stringify(chart.table) === JSON.stringify(oldest.map(r => [r.release, pct(r.crash_free_sessions), pct(r.crash_free_users)])),
              `the releases chart's table for screen readers (${JSON.stringify(chart.table)})`);
        check(/crash-free sessions and users by release/i.test(chart.label), `the releases chart's label (${chart.label})`);
      }
      await shot('releases');
      await page.click(`#releases a[href="#/releases/${encodeURIComponent(r1.release)}"]`);
      await page.waitForSelector('#release-title');
      check((await page.textContent('#release-title')) === r1.release, 'a release opens');
      check((await page.textContent('#release-cfs')) === pct(r1.crash_free_sessions), 'its crash-free sessions');
      {
        const detail = await api('/api/v1/releases/' + encodeURIComponent(r1.release));
        const daily = await page.$eval('#release-daily figure', fig => ({
          x: Array.from(fig.querySelectorAll('.axis-x text[data-label]')).map(t => t.getAttribute('data-label')),
          table: Array.from(fig.querySelectorAll('table.sr-only tbody tr')).map(tr => tr.children[0].textContent),
        }));
        const days = (detail.daily || []).map(d => d.day);
        check(days.length >= 1 && daily.x.includes(days[days.length - 1]) && JSON.stringify(daily.table) === JSON.stringify(days),
              `a release's daily chart has its dates (${daily.x})`);
      }
      // an issue seen in 1.0 lists release 1.0 among its releases
      const one = (await api('/api/v1/issues?version=1.0&limit=1')).issues[0];
      if (check(!!one, 'an issue of version 1.0')) {
        await page.evaluate(id => { location.hash = '#/issues/' + id; }, one.id);
        await page.waitForSelector('#issue-releases a.tag');
        const tags = await page.$$eval('#issue-releases a.tag', as => as.map(a => a.textContent));
        check(tags.includes(r1.release), `the issue page lists its releases (${tags})`);
      }
    }

    check(foreign.length === 0, 'no request leaves the server: ' + foreign.slice(0, 3).join(' '));
    check(problems.length === 0, 'no page error or console error: ' + problems.slice(0, 3).join(' | '));
  } catch (e) {
    check(false, 'unexpected: ' + (e && e.stack || e));
    await shot('failure').catch(() => {});
  } finally {
    await browser.close();
  }
  for (const s of shots) console.log('screenshot: ' + s);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main();
