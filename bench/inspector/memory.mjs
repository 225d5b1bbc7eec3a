// The memory of a browser, sampled while it works: every 100 ms the
// resident memory of each of its processes (renderers, where the page's
// workers run too, the GPU and utility processes) from /proc/<pid>/status
// (cheap), and every 10th sample the PSS from /proc/<pid>/smaps_rollup
// (proportional set size: a shared page split among the processes that map
// it, so the sum counts it once; exact, but reading it costs a few ms per
// process here, too much to take 10 times a second beside the timings).
// PSS counts shared library pages in shares that change when other
// Chromium instances on the machine start or end; its anonymous part
// (Pss_Anon + Pss_Shmem: heaps, wasm memories, buffers) does not, so it is
// the figure to compare runs by.
// Also the CPU time those processes and the whole machine used meanwhile,
// to tell how much else ran during a run. Linux only.
import { readFileSync, readdirSync } from 'node:fs';

const KiB = 1024;
/** Clock ticks per second of /proc's CPU times (USER_HZ). */
const HZ = 100;

/** Busy CPU seconds of the whole machine since boot (all cores). */
export function machineBusy() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: all but idle and iowait.
  return (f[0] + f[1] + f[2] + f[5] + f[6] + f[7]) / HZ;
}

/** pid -> { parent, cpu (user + system seconds) } of every process now. */
function processes() {
  const out = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // The command name is in parentheses and may hold spaces.
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(name), { parent: Number(rest[1]), cpu: (Number(rest[11]) + Number(rest[12])) / HZ });
    } catch {
      // Gone between the listing and the read.
    }
  }
  return out;
}

/** The descendants of `root` (not `root`), with the CPU seconds of each. */
function descendants(root) {
  const procs = processes();
  const pids = new Set([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, { parent }] of procs) {
      if (!pids.has(pid) && pids.has(parent)) {
        pids.add(pid);
        grew = true;
      }
    }
  }
  pids.delete(root);
  return [...pids].map((pid) => ({ pid, cpu: procs.get(pid).cpu }));
}

/** What a Chromium process is, from its --type flag ('browser' without one). */
function kindOf(pid) {
  try {
    // Chromium rewrites its children's command lines into one string.
    const line = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
    const type = /--type=(\S+)/.exec(line)?.[1];
    if (!type) return /chromium\.sh|\/bin\/chromium /.test(line) ? 'wrapper' : 'browser';
    if (type === 'utility') return `utility:${/--utility-sub-type=(\S+)/.exec(line)?.[1].split('.').pop() ?? '?'}`;
    return type;
  } catch {
    return null;
  }
}

function fields(path, names) {
  try {
    const text = readFileSync(path, 'utf8');
    return names.map((n) => Number(new RegExp(`^${n}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * KiB);
  } catch {
    return null;
  }
}

/**
 * Samples the processes under `root` every `everyMs` until stop(). Each
 * sample has rss (the sum of VmRSS: shared pages counted in each process),
 * anon (the sum of RssAnon + RssShmem: what the processes allocated, pages
 * a fork shares counted in each), and every `pssEvery`th one pss and
 * pssAnon (its anonymous and shared-memory part). `mark(name)` starts a phase; `phase(name)`
 * summarizes its samples.
 */
export function sampler(root, everyMs = 100, pssEvery = 10) {
  const samples = [];
  const cpu = new Map();
  const kinds = new Map();
  const start = { t: performance.now(), machine: machineBusy(), self: process.cpuUsage() };
  let pids = [];
  let tick = 0;
  let current = 'start';
  const take = (full) => {
    if (full || tick % pssEvery === 0) {
      for (const p of (pids = descendants(root))) {
        cpu.set(p.pid, Math.max(cpu.get(p.pid) ?? 0, p.cpu));
        if (!kinds.has(p.pid)) kinds.set(p.pid, kindOf(p.pid) ?? '?');
      }
    }
    const s = { t: performance.now(), phase: current, rss: 0, anon: 0, pss: null, pssAnon: null, byKind: null };
    for (const { pid } of pids) {
      const f = fields(`/proc/${pid}/status`, ['VmRSS', 'RssAnon', 'RssShmem']);
      if (!f) continue;
      s.rss += f[0];
      s.anon += f[1] + f[2];
    }
    if (full || tick % pssEvery === 0) {
      s.pss = 0;
      s.pssAnon = 0;
      s.byKind = {};
      for (const { pid } of pids) {
        const f = fields(`/proc/${pid}/smaps_rollup`, ['Pss', 'Pss_Anon', 'Pss_Shmem']);
        if (!f) continue;
        s.pss += f[0];
        s.pssAnon += f[1] + f[2];
        const k = kinds.get(pid);
        s.byKind[k] = (s.byKind[k] ?? 0) + f[0];
      }
    }
    tick++;
    samples.push(s);
  };
  take(true);
  // What the browser had used before sampling began is not the run's.
  const before = [...cpu.values()].reduce((a, b) => a + b, 0);
  const timer = setInterval(() => take(false), everyMs);
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? null;
  const summary = (list) => {
    if (list.length === 0) return null;
    const withPss = list.filter((s) => s.pss !== null);
    const peak = withPss.reduce((a, b) => (b.pss > a.pss ? b : a), withPss[0] ?? { pss: null, byKind: null });
    return {
      samples: list.length,
      pssSamples: withPss.length,
      peakPss: peak.pss,
      medianPss: median(withPss.map((s) => s.pss)),
      peakPssAnon: Math.max(...withPss.map((s) => s.pssAnon)),
      medianPssAnon: median(withPss.map((s) => s.pssAnon)),
      peakByKind: peak.byKind,
      peakAnon: Math.max(...list.map((s) => s.anon)),
      medianAnon: median(list.map((s) => s.anon)),
      peakRss: Math.max(...list.map((s) => s.rss)),
      lastPss: withPss.at(-1)?.pss ?? null,
      lastPssAnon: withPss.at(-1)?.pssAnon ?? null,
      lastAnon: list.at(-1).anon,
      meanIntervalMs: list.length > 1 ? (list.at(-1).t - list[0].t) / (list.length - 1) : null,
    };
  };
  return {
    /** Starts phase `name`, with a full sample at its edge. */
    mark(name) {
      take(true);
      current = name;
      take(true);
    },
    phase: (name) => summary(samples.filter((s) => s.phase === name)),
    phases: (names) => summary(samples.filter((s) => names.includes(s.phase))),
    stop() {
      clearInterval(timer);
      take(true);
    },
    /**
     * CPU seconds over the run: the machine's, the browser's (its processes
     * as last sampled), this Node process's (driver, server, sampling), and
     * what is left, other work on the machine, also as cores busy on average.
     */
    cpu() {
      const wall = (performance.now() - start.t) / 1000;
      const machine = machineBusy() - start.machine;
      const browser = [...cpu.values()].reduce((a, b) => a + b, 0) - before;
      const u = process.cpuUsage(start.self);
      const self = (u.user + u.system) / 1e6;
      const others = Math.max(0, machine - browser - self);
      const r = (x) => Math.round(x * 100) / 100;
      return { wallSeconds: r(wall), machine: r(machine), browser: r(browser), driver: r(self), others: r(others), othersCores: r(others / wall) };
    },
  };
}
