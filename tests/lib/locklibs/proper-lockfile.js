#!/usr/bin/env node
'use strict';
// proper-lockfile.js — drives proper-lockfile (npm proper-lockfile; Debian
// node-proper-lockfile).
//
//   proper-lockfile.js [--stale S] [--update S] LOCK ACTION [ARGS]
//
// proper-lockfile takes a lock by mkdir(LOCK); while held it refreshes it with
// fs.utimes(LOCK, now, now) every `update` ms (default stale/2) and calls the
// lock compromised when the mtime is no longer the one it set.  A contender
// whose mkdir fails stats LOCK and, when its mtime is older than `stale` ms
// (default 10 000), removes it (rmdir) and takes it.  Release is rmdir.
// Actions: see README.md in this directory.

const common = require('./locklib_common');
common.addModulePaths();

let lockfile;
try {
    lockfile = require('proper-lockfile');
} catch (e) {
    common.say('error: proper-lockfile is not installed:', e.message);
    process.exit(2);
}

let argv = process.argv.slice(2);
if (argv[0] === 'version') {
    common.say('proper-lockfile', require('proper-lockfile/package.json').version);
    process.exit(0);
}
let stale = 10000, update = null;
while (argv.length && argv[0].startsWith('--')) {
    const [opt, val] = [argv[0], Number(argv[1])];
    argv = argv.slice(2);
    if (opt === '--stale') stale = val * 1000;
    else if (opt === '--update') update = val * 1000;
    else { common.say('error: unknown option', opt); process.exit(2); }
}
const path = argv[0];
let releaseFn = null;
let compromised = null;

function opts(retries) {
    return {
        lockfilePath: path, realpath: false, stale, update, retries,
        onCompromised: (e) => { compromised = `${e.code || ''} ${e.message}`; },
    };
}

async function take(retries) {
    try {
        compromised = null;
        releaseFn = await lockfile.lock(path, opts(retries));
        return true;
    } catch (e) {
        if (e.code === 'ELOCKED') return false;
        throw e;
    }
}

common.run(argv.slice(1), {
    attempt: () => take(0),
    // The library's own retries (the retry module), every 250 ms, as long as asked.
    wait: (secs) => take({ retries: Math.max(1, Math.floor(secs * 4)), factor: 1, minTimeout: 250, maxTimeout: 250 }),
    release: async () => {
        const rel = releaseFn;
        releaseFn = null;
        try {
            await rel();
            return compromised;
        } catch (e) {
            return `${e.code || ''} ${e.message}`;
        }
    },
    lost: () => compromised,
});
