// lincheck: a test oracle (never shipped) that checks a recorded history of key-value requests
// against etcd for linearizability with porcupine (github.com/anishathalye/porcupine), the
// checker etcd's own robustness suite uses. The C++ harness records every request a workload
// client sent through the faults and its answer; this program says whether some order of them,
// each taking effect between its call and its return, explains every answer. Built and pinned by
// scripts/go-test-tools.sh (test/go-tools/tools); found with `scripts/go-test-tools.sh --where
// lincheck`.
//
// Input: one JSON object per line (file argument, or stdin), times in nanoseconds of one clock:
//
//	{"client": 1, "op": "put", "key": "k", "value": "v", "call": 100, "return": 250, "outcome": "ok"}
//	{"client": 2, "op": "get", "key": "k", "call": 120, "return": 300, "outcome": "ok", "found": true, "value": "v"}
//	{"client": 3, "op": "delete", "key": "k", "call": 400, "return": 500, "outcome": "ok"}
//	{"client": 4, "op": "cas", "key": "k", "expect": "v", "value": "w", "call": 600, "return": 700, "outcome": "ok"}
//
// "cas" is a transaction: if the key holds `expect` (with "expectAbsent": true: if the key is
// absent) put `value`; outcome "ok" (it did) or "failed" (the compare did not hold). Outcome
// "unknown": the request may or may not have taken effect (a timeout, a lost connection): it is
// taken to have taken effect at any time after its call, or never ("return" is ignored); an
// unknown "get" says nothing and is left out.
//
// Before checking, an unknown put or cas whose value no answer shows (no get returned it, no
// succeeded cas expected it) is left out when its key has no failed cas after its call, as etcd's
// robustness suite patches its histories: it may never have taken effect, and leaving it out only
// narrows the orders porcupine may choose, so a "linearizable" verdict stands for the whole
// history. Without it, the writes that time out while a cluster has no quorum (hundreds) make the
// search explode. Values are expected to be unique per write (the harness's are).
//
// Output on stdout: "linearizable" (exit 0), "not linearizable" (exit 1; with -html FILE,
// porcupine's visualization shows the longest order found per key), "unknown: timed out"
// (exit 3). Bad input: a message on stderr, exit 2.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

type record struct {
	Client       int    `json:"client"`
	Op           string `json:"op"`
	Key          string `json:"key"`
	Value        string `json:"value"`
	Expect       string `json:"expect"`
	ExpectAbsent bool   `json:"expectAbsent"`
	Call         int64  `json:"call"`
	Return       int64  `json:"return"`
	Outcome      string `json:"outcome"`
	Found        bool   `json:"found"`
}

// A key's state: absent, or present with a value.
type state struct {
	present bool
	value   string
}

type input struct {
	op, key, value, expect string
	expectAbsent           bool
}

type output struct {
	outcome string // ok, failed, unknown
	found   bool
	value   string
}

func step(s state, in input, out output) (bool, state) {
	switch in.op {
	case "put":
		return true, state{true, in.value}
	case "delete":
		return true, state{}
	case "get":
		if !out.found {
			return !s.present, s
		}
		return s.present && s.value == out.value, s
	case "cas":
		holds := (in.expectAbsent && !s.present) || (!in.expectAbsent && s.present && s.value == in.expect)
		switch out.outcome {
		case "ok":
			if holds {
				return true, state{true, in.value}
			}
			return false, s
		case "failed":
			return !holds, s
		default: // unknown: applied if the compare held when it took effect
			if holds {
				return true, state{true, in.value}
			}
			return true, s
		}
	}
	return false, s
}

var model = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(input).key
			if _, seen := byKey[k]; !seen {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() interface{} { return state{} },
	Step: func(s, in, out interface{}) (bool, interface{}) {
		return step(s.(state), in.(input), out.(output))
	},
	Equal: func(a, b interface{}) bool { return a.(state) == b.(state) },
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(input), out.(output)
		switch i.op {
		case "get":
			if !o.found {
				return fmt.Sprintf("get(%s) -> absent", i.key)
			}
			return fmt.Sprintf("get(%s) -> %q", i.key, o.value)
		case "cas":
			return fmt.Sprintf("cas(%s, %q -> %q) -> %s", i.key, i.expect, i.value, o.outcome)
		}
		return fmt.Sprintf("%s(%s, %q) -> %s", i.op, i.key, i.value, o.outcome)
	},
	DescribeState: func(s interface{}) string {
		st := s.(state)
		if !st.present {
			return "absent"
		}
		return fmt.Sprintf("%q", st.value)
	},
}

func readHistory(r io.Reader) ([]porcupine.Operation, error) {
	var ops []porcupine.Operation
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	for scanner.Scan() {
		line++
		if len(scanner.Bytes()) == 0 {
			continue
		}
		var rec record
		if err := json.Unmarshal(scanner.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		switch rec.Op {
		case "put", "get", "delete", "cas":
		default:
			return nil, fmt.Errorf("line %d: op %q is not put, get, delete or cas", line, rec.Op)
		}
		switch rec.Outcome {
		case "ok", "unknown":
		case "failed":
			if rec.Op != "cas" {
				return nil, fmt.Errorf("line %d: only a cas fails (a failed %s is an error: leave it out)", line, rec.Op)
			}
		default:
			return nil, fmt.Errorf("line %d: outcome %q is not ok, failed or unknown", line, rec.Outcome)
		}
		if rec.Outcome == "unknown" && rec.Op == "get" {
			continue
		}
		ret := rec.Return
		if rec.Outcome == "unknown" {
			ret = math.MaxInt64
		} else if ret < rec.Call {
			return nil, fmt.Errorf("line %d: returns (%d) before its call (%d)", line, ret, rec.Call)
		}
		ops = append(ops, porcupine.Operation{
			ClientId: rec.Client,
			Input:    input{rec.Op, rec.Key, rec.Value, rec.Expect, rec.ExpectAbsent},
			Call:     rec.Call,
			Output:   output{rec.Outcome, rec.Found, rec.Value},
			Return:   ret,
		})
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	return withoutUnobservedUnknownWrites(ops), nil
}

// withoutUnobservedUnknownWrites leaves out the unknown puts and cas whose effect no answer needs
// (see the header): their value never read nor expected by a succeeded cas, and no failed cas
// on their key called after them (whose failure the write might explain).
func withoutUnobservedUnknownWrites(ops []porcupine.Operation) []porcupine.Operation {
	type keyValue struct{ key, value string }
	observed := map[keyValue]bool{}
	lastFailedCasCall := map[string]int64{}
	for _, op := range ops {
		in, out := op.Input.(input), op.Output.(output)
		switch {
		case in.op == "get" && out.found:
			observed[keyValue{in.key, out.value}] = true
		case in.op == "cas" && out.outcome == "ok" && !in.expectAbsent:
			observed[keyValue{in.key, in.expect}] = true
		case in.op == "cas" && out.outcome == "failed":
			if op.Call > lastFailedCasCall[in.key] {
				lastFailedCasCall[in.key] = op.Call
			}
		}
	}
	kept := ops[:0]
	for _, op := range ops {
		in, out := op.Input.(input), op.Output.(output)
		write := in.op == "put" || in.op == "cas"
		failedAfter, anyFailed := lastFailedCasCall[in.key]
		if out.outcome == "unknown" && write && !observed[keyValue{in.key, in.value}] &&
			(!anyFailed || failedAfter < op.Call) {
			continue
		}
		kept = append(kept, op)
	}
	return kept
}

func main() {
	html := flag.String("html", "", "when the history is not linearizable, write porcupine's visualization of it here")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up (verdict unknown) after this long")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: lincheck [-html FILE] [-timeout D] [HISTORY.jsonl]")
		flag.PrintDefaults()
	}
	flag.Parse()
	var in io.Reader = os.Stdin
	if flag.NArg() > 1 {
		flag.Usage()
		os.Exit(2)
	}
	if flag.NArg() == 1 {
		f, err := os.Open(flag.Arg(0))
		if err != nil {
			fmt.Fprintln(os.Stderr, "lincheck:", err)
			os.Exit(2)
		}
		defer f.Close()
		in = f
	}
	history, err := readHistory(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lincheck:", err)
		os.Exit(2)
	}
	result, info := porcupine.CheckOperationsVerbose(model, history, *timeout)
	if *html != "" && result != porcupine.Ok {
		if err := porcupine.VisualizePath(model, info, *html); err != nil {
			fmt.Fprintln(os.Stderr, "lincheck: visualization:", err)
		}
	}
	switch result {
	case porcupine.Ok:
		fmt.Printf("linearizable (%d operations)\n", len(history))
	case porcupine.Illegal:
		fmt.Printf("not linearizable (%d operations)\n", len(history))
		os.Exit(1)
	default:
		fmt.Printf("unknown: timed out after %s (%d operations)\n", *timeout, len(history))
		os.Exit(3)
	}
}
