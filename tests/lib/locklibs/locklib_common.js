'use strict';
// locklib_common.js — the driver protocol shared by the Node.js lock-library
// drivers in this directory (see README.md here for the protocol).
//
// A driver supplies, for its library:
//   attempt()     a Promise of true (got it) or false (the library's "held"
//                 answer); rejects on any other answer
//   release()     a Promise of null, or of a string saying why the library
//                 says the lock was no longer ours
//   wait(secs)    the library's own waiting acquisition bounded by secs: a
//                 Promise of true or false (timed out)
//   lost()        optional: a string once the library has told the holder
//                 that its lock was compromised, else null
//
// Node's fs calls run on libuv's thread pool, so one process's mkdir and
// rmdir (or open and unlink) generally come from different threads.

const fs = require('fs');

// The modules are installed where the system's node (NodeSource's, which has
// no Debian search path) does not look by itself: Debian's packages in
// /usr/share/nodejs, the npm registry's in /var/cache/lockfs/npm.
function addModulePaths() {
    const Module = require('module');
    const dirs = ['/usr/share/nodejs', '/var/cache/lockfs/npm/node_modules'];
    const cur = process.env.NODE_PATH ? process.env.NODE_PATH.split(':') : [];
    process.env.NODE_PATH = cur.concat(dirs).join(':');
    Module._initPaths();
}

function say(...words) {
    fs.writeSync(1, words.join(' ') + '\n');
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rand = (lo, hi) => lo + Math.random() * (hi - lo);
// Wall-clock nanoseconds, comparable across processes (and with the other
// workers' clocks): the monotonic clock plus the wall clock's offset from it,
// measured where Date.now() turns to a new millisecond.  Node's own
// performance.timeOrigin is read at start-up in two steps, and under load a
// process may be off by several milliseconds.  A late reading only makes the
// offset smaller, so the largest of a few is kept.
function wallOffsetNs() {
    let best = null;
    for (let i = 0; i < 5; i++) {
        const ms = Date.now();
        let now;
        while ((now = Date.now()) === ms);
        const off = BigInt(now) * 1000000n - process.hrtime.bigint();
        if (best === null || off > best) best = off;
    }
    return best;
}
const WALL_OFFSET_NS = wallOffsetNs();
const nowNs = () => process.hrtime.bigint() + WALL_OFFSET_NS;

async function main(argv, lib) {
    const action = argv[0];
    const args = argv.slice(1);
    try {
        if (action === 'try') {
            if (!(await lib.attempt())) { say('held'); return 1; }
            say('got');
            const why = await lib.release();
            if (why) { say('lost:', why); return 3; }
            say('released');
            return 0;
        }
        if (action === 'hold') {
            const secs = Number(args[0]);
            const stop = args[1];
            if (!(await lib.attempt())) { say('held'); return 1; }
            say('got');
            const t0 = Date.now();
            while (Date.now() - t0 < secs * 1000) {
                if (stop && fs.existsSync(stop)) break;
                await sleep(50);
            }
            const lost = lib.lost ? lib.lost() : null;
            const why = await lib.release();
            if (lost || why) { say('lost:', lost || why); return 3; }
            say('released');
            return 0;
        }
        if (action === 'wait') {
            const secs = Number(args[0]);
            const t0 = Date.now();
            const got = await lib.wait(secs);
            const dt = ((Date.now() - t0) / 1000).toFixed(2);
            if (!got) { say('timeout after', dt); return 1; }
            say('got after', dt);
            const why = await lib.release();
            if (why) { say('lost:', why); return 3; }
            return 0;
        }
        if (action === 'contend') {
            const [n, logpath, id, host, deadline] = [Number(args[0]), args[1], args[2], args[3], Number(args[4])];
            // One write(2) per line on an O_APPEND descriptor: a linear history.
            const fd = fs.openSync(logpath, 'a');
            let done = 0, errs = 0, backoff = 4;
            while (done < n && Date.now() / 1000 < deadline) {
                let got = false;
                try {
                    got = await lib.attempt();
                } catch (e) {
                    errs++;
                    process.stderr.write(`attempt: ${e.code || ''} ${e.message}\n`);
                }
                if (!got) {
                    await sleep(rand(backoff / 2, backoff));
                    backoff = Math.min(backoff * 2, 128);
                    continue;
                }
                backoff = 4;
                done++;
                fs.writeSync(fd, `S ${host} ${id} ${done} ${nowNs()}\n`);
                await sleep(rand(1, 4));
                fs.writeSync(fd, `E ${host} ${id} ${done} ${nowNs()}\n`);
                const why = await lib.release();
                if (why) { errs++; process.stderr.write(`release: ${why}\n`); }
                await sleep(rand(2, 8));
            }
            say('done', done, n, errs);
            return done === n && errs === 0 ? 0 : 1;
        }
        say('error: unknown action', action);
        return 2;
    } catch (e) {
        say('error:', e.code || '', e.message);
        return 2;
    }
}

function run(argv, lib) {
    main(argv, lib).then((rc) => process.exit(rc), (e) => { say('error:', e.message); process.exit(2); });
}

module.exports = { addModulePaths, say, sleep, run };
