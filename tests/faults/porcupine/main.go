// Command porcupine-check checks a fault-suite history (tests/faults/check.py
// --history) with Porcupine, a linearizability checker, against a mutex
// with fences (readers-writer for shared locks).
//
// Usage: porcupine-check [-timeout 120s] [-visualize FILE.html] HISTORY
//
// HISTORY has one operation a line, tab-separated:
//
//	client resource mode op call_ns return_ns fence section
//
// client is the worker, resource the lock (R.lock, flock:F, posix:P), mode x
// (exclusive) or s (shared), op acquire or release; an acquire returns the
// fence the holder was shown (0: none shown, not checked).  A section's
// acquire is called when its worker began to take the lock and returns when
// it began its work; its release is called when the work ended and returns
// when the lock was let go.
//
// The model, one partition per resource: the state is the writer (or none),
// the readers, and the largest fences granted so far (to anyone, and to a
// writer).  An exclusive acquire succeeds only when nobody holds the lock and
// returns a fence larger than every earlier one; a shared acquire only when
// no writer holds it, with a fence larger than every earlier writer's; a
// release by a holder frees its hold.  Two sections whose work overlapped
// (exclusive with anything), or fences that went backwards, make the history
// not linearizable.
//
// Prints one line per resource and a verdict; exits 0 when every resource's
// history is linearizable, 1 when one is not, 3 when the check timed out
// (unknown), 2 on an unreadable history.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

type input struct {
	res     string
	acquire bool
	shared  bool
	client  int
	section string
}

// Fences are decimal strings: tinystore's are wider than 64 bits.
type fence string

// greater: f > g as numbers (no leading zeros); "" and "0" are none.
func (f fence) greater(g fence) bool {
	if len(f) != len(g) {
		return len(f) > len(g)
	}
	return f > g
}

func (f fence) none() bool { return f == "" || f == "0" }

type state struct {
	writer  int    // -1: none
	readers string // sorted client numbers, comma-separated
	maxAll  fence
	maxX    fence
}

func readersOf(s string) []int {
	if s == "" {
		return nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

func joinReaders(rs []int) string {
	sort.Ints(rs)
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = strconv.Itoa(r)
	}
	return strings.Join(parts, ",")
}

func step(st interface{}, in interface{}, out interface{}) (bool, interface{}) {
	s := st.(state)
	i := in.(input)
	if i.acquire {
		fence := out.(fence)
		if s.writer >= 0 {
			return false, s
		}
		if !i.shared {
			if s.readers != "" || (!fence.none() && !fence.greater(s.maxAll)) {
				return false, s
			}
			s.writer = i.client
			if !fence.none() {
				s.maxAll, s.maxX = fence, fence
			}
			return true, s
		}
		if !fence.none() && !fence.greater(s.maxX) {
			return false, s
		}
		rs := readersOf(s.readers)
		for _, r := range rs {
			if r == i.client {
				return false, s
			}
		}
		s.readers = joinReaders(append(rs, i.client))
		if fence.greater(s.maxAll) {
			s.maxAll = fence
		}
		return true, s
	}
	if !i.shared {
		if s.writer != i.client {
			return false, s
		}
		s.writer = -1
		return true, s
	}
	rs := readersOf(s.readers)
	for k, r := range rs {
		if r == i.client {
			s.readers = joinReaders(append(rs[:k:k], rs[k+1:]...))
			return true, s
		}
	}
	return false, s
}

var model = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			r := op.Input.(input).res
			if _, ok := by[r]; !ok {
				keys = append(keys, r)
			}
			by[r] = append(by[r], op)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() interface{} { return state{writer: -1} },
	Step: step,
	DescribeOperation: func(in, out interface{}) string {
		i := in.(input)
		m := "x"
		if i.shared {
			m = "s"
		}
		if i.acquire {
			return fmt.Sprintf("%s acquire(%s) -> fence %s [%s]", i.res, m, out.(fence), i.section)
		}
		return fmt.Sprintf("%s release(%s) [%s]", i.res, m, i.section)
	},
	DescribeState: func(st interface{}) string {
		s := st.(state)
		return fmt.Sprintf("writer %d, readers [%s], last fence %s", s.writer, s.readers, s.maxAll)
	},
}

func load(path string) ([]porcupine.Operation, map[string]int, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	clients := map[string]int{}
	perRes := map[string]int{}
	var ops []porcupine.Operation
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		t := sc.Text()
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		f := strings.Split(t, "\t")
		if len(f) < 7 {
			return nil, nil, fmt.Errorf("%s:%d: %d fields, want 8", path, line, len(f))
		}
		call, err1 := strconv.ParseInt(f[4], 10, 64)
		ret, err2 := strconv.ParseInt(f[5], 10, 64)
		fc := fence(strings.TrimLeft(f[6], "0"))
		if err1 != nil || err2 != nil || strings.Trim(f[6], "0123456789") != "" || f[6] == "" || (f[3] != "acquire" && f[3] != "release") {
			return nil, nil, fmt.Errorf("%s:%d: unreadable: %q", path, line, t)
		}
		if ret < call {
			ret = call
		}
		c, ok := clients[f[0]]
		if !ok {
			c = len(clients)
			clients[f[0]] = c
		}
		sec := ""
		if len(f) > 7 {
			sec = f[7]
		}
		in := input{res: f[1], acquire: f[3] == "acquire", shared: f[2] == "s", client: c, section: sec}
		var out interface{} = fc
		if !in.acquire {
			out = fence("")
		}
		ops = append(ops, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
		perRes[f[1]]++
	}
	return ops, perRes, sc.Err()
}

func main() {
	timeout := flag.Duration("timeout", 120*time.Second, "give up (unknown) after this long")
	vis := flag.String("visualize", "", "write Porcupine's HTML visualization here when a history is not linearizable")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: porcupine-check [-timeout D] [-visualize FILE] HISTORY")
		os.Exit(2)
	}
	ops, perRes, err := load(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "porcupine-check:", err)
		os.Exit(2)
	}
	var names []string
	for r := range perRes {
		names = append(names, r)
	}
	sort.Strings(names)
	rc := 0
	for _, r := range names {
		var sub []porcupine.Operation
		for _, op := range ops {
			if op.Input.(input).res == r {
				sub = append(sub, op)
			}
		}
		t0 := time.Now()
		res, info := porcupine.CheckOperationsVerbose(model, sub, *timeout)
		verdict := map[porcupine.CheckResult]string{porcupine.Ok: "linearizable",
			porcupine.Illegal: "NOT linearizable", porcupine.Unknown: "unknown (timed out)"}[res]
		fmt.Printf("%s: %d operations (%d sections): %s (%.1f s)\n", r, len(sub), len(sub)/2, verdict,
			time.Since(t0).Seconds())
		switch res {
		case porcupine.Illegal:
			rc = 1
			// The longest prefix Porcupine could linearize, and where it stopped.
			best := []int{}
			for _, part := range info.PartialLinearizations() {
				for _, lin := range part {
					if len(lin) > len(best) {
						best = lin
					}
				}
			}
			if len(best) > 0 {
				last := sub[best[len(best)-1]]
				fmt.Printf("  the longest linearizable prefix has %d of %d operations; it ends with %s\n",
					len(best), len(sub), model.DescribeOperation(last.Input, last.Output))
			}
			if *vis != "" {
				if err := porcupine.VisualizePath(model, info, *vis); err == nil {
					fmt.Printf("  visualization: %s\n", *vis)
				}
			}
		case porcupine.Unknown:
			if rc == 0 {
				rc = 3
			}
		}
	}
	if len(names) == 0 {
		fmt.Println("no operations")
	}
	os.Exit(rc)
}
