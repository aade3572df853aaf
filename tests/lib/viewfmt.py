"""The escapes of lockfs's .lockfs/ view, written again for the tests.

src/common/view_format.h is the rule; this is an independent second reading of it
(Python's strict UTF-8 decoder judges well-formedness), so that a test
compares the daemon's and lockfsctl's output with what the rule says rather
than with the same code.  \\NNN (three octal digits of one byte) for:
every byte below 0x21 and 0x7f; the backslash; every byte of a sequence
that is not well-formed UTF-8; every byte of the UTF-8 form of U+0080-U+009F,
U+200E, U+200F, U+2028, U+2029, U+202A-U+202E and U+2066-U+2069.  With
keep_space, the space is kept (lockfsctl's command column).

Also a command line: python3 viewfmt.py escape|escape-text|unescape ARG
prints ARG (its bytes) transformed, without a newline.
"""
import os
import re
import sys

_UNSAFE = [(0x00, 0x20), (0x7f, 0x9f), (0x200e, 0x200f), (0x2028, 0x2029),
           (0x202a, 0x202e), (0x2066, 0x2069)]


def unsafe(cp):
    return any(lo <= cp <= hi for lo, hi in _UNSAFE)


def _char_at(data, i):
    """The well-formed UTF-8 character starting at data[i], or None."""
    for n in range(1, 5):
        try:
            s = data[i:i + n].decode('utf-8')
        except UnicodeDecodeError:
            continue
        if len(s) == 1:
            return s
        return None
    return None


def escape(data, keep_space=False):
    out = bytearray()
    i = 0
    while i < len(data):
        ch = _char_at(data, i)
        if ch is None:
            out += b'\\%03o' % data[i]
            i += 1
            continue
        raw = ch.encode('utf-8')
        cp = ord(ch)
        if cp == 0x20:
            esc = not keep_space
        else:
            esc = cp == 0x5c or unsafe(cp)
        out += b''.join(b'\\%03o' % c for c in raw) if esc else raw
        i += len(raw)
    return bytes(out)


_ESC = re.compile(rb'\\([0-3][0-7][0-7])')


def unescape(data):
    """DATA with every \\NNN decoded; ValueError at any other backslash."""
    if re.search(rb'\\(?![0-3][0-7][0-7])', data):
        raise ValueError('malformed escape in %r' % data)
    return _ESC.sub(lambda m: bytes([int(m.group(1), 8)]), data)


def clean(data, allow=b''):
    """DATA is valid UTF-8 with no unsafe character except those in ALLOW
    (bytes such as b' \\n'): what may be printed to a terminal."""
    try:
        s = data.decode('utf-8')
    except UnicodeDecodeError:
        return False
    return all(not unsafe(ord(c)) or c.encode() in [bytes([a]) for a in allow]
               for c in s)


if __name__ == '__main__':
    how, arg = sys.argv[1], os.fsencode(sys.argv[2])
    if how == 'escape':
        r = escape(arg)
    elif how == 'escape-text':
        r = escape(arg, keep_space=True)
    elif how == 'unescape':
        r = unescape(arg)
    else:
        sys.exit('usage: viewfmt.py escape|escape-text|unescape ARG')
    sys.stdout.buffer.write(r)
