#!/usr/bin/env node
'use strict';
// npm-lockfile.js — drives lockfile (npm lockfile, by isaacs; installed from the
// npm registry into /var/cache/lockfs/npm by scripts/install-lock-libraries).
//
//   npm-lockfile.js [--stale S] LOCK ACTION [ARGS]
//
// lockfile takes a lock by open(LOCK, "wx") (O_CREAT|O_EXCL) and releases it by
// unlink.  With `stale`, a contender whose open fails stats LOCK and, when its
// ctime is older than `stale` ms, takes LOCK.STALE (O_EXCL), unlinks LOCK,
// links LOCK.STALE to LOCK and unlinks LOCK.STALE.  It never refreshes.
// Actions: see README.md in this directory.

const common = require('./locklib_common');
common.addModulePaths();

let lockfile;
try {
    lockfile = require('lockfile');
} catch (e) {
    common.say('error: npm lockfile is not installed:', e.message);
    process.exit(2);
}

let argv = process.argv.slice(2);
if (argv[0] === 'version') {
    common.say('lockfile', require('lockfile/package.json').version);
    process.exit(0);
}
let stale = 0;
while (argv.length && argv[0].startsWith('--')) {
    const [opt, val] = [argv[0], Number(argv[1])];
    argv = argv.slice(2);
    if (opt === '--stale') stale = val * 1000;
    else { common.say('error: unknown option', opt); process.exit(2); }
}
const path = argv[0];

function take(o) {
    return new Promise((resolve, reject) => {
        lockfile.lock(path, o, (er) => {
            if (!er) return resolve(true);
            if (er.code === 'EEXIST') return resolve(false);
            reject(er);
        });
    });
}

common.run(argv.slice(1), {
    attempt: () => take(stale ? { stale } : {}),
    wait: (secs) => take({ wait: secs * 1000, pollPeriod: 250, ...(stale ? { stale } : {}) }),
    // The library's unlock ignores errors ("best effort"): it has no word for
    // a lost lock.
    release: () => new Promise((resolve) => lockfile.unlock(path, () => resolve(null))),
});
