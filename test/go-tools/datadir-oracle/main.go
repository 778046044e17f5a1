// datadir-oracle: a test oracle (never shipped) that reads etcd data directories, bbolt files and
// raft/WAL files with etcd's own Go packages, so that the C++ tests can check what the native
// restore writes against what etcd itself reads. Built and pinned by scripts/go-test-tools.sh
// (test/go-tools/tools); the C++ tests find the binary with `scripts/go-test-tools.sh --where
// datadir-oracle`.
//
// Exit status: 0 success, 1 any finding or error (message on stderr), 2 usage.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

const usage = `usage: datadir-oracle COMMAND ARGS

  check-db FILE [--write]
      Opens the bbolt FILE read-only (a trailer past the last page, such as the 32-byte SHA-256
      of an etcd snapshot file, is allowed), runs bbolt's tx.Check() and prints every error it
      reports. With --write, a copy of FILE in the temp dir is then opened read-write with
      bbolt's default options (which rebuilds and syncs a missing freelist), a bucket
      "oracle-check" gets 1000 keys, and after close/reopen tx.Check() must pass again, every
      pre-existing bucket must have the same key count and content hash, and the new keys must
      read back; the bucket is then deleted and the check repeated (the freed pages are reused).
      Stdout: a JSON summary.
  dump-db FILE
      tx.Check() (must report nothing), then canonical JSON:
      {"pageSize":N,"dataSize":N,"fileSize":N,"buckets":{"<name>":{"<hex key>":"<hex value>",...}}}
      A nested bucket appears in its parent as "<hex key>": {...its own keys...} (an object where
      a value would be a string). Bucket names that are not printable ASCII are written "0x<hex>".
  dump-datadir DIR
      DIR is an etcd data dir (DIR/member/{snap,wal}). Canonical JSON with "files" (every path
      under DIR with its type, octal mode and size), "wal" (wal.ValidSnapshotEntries, and
      wal.OpenForRead at the zero snapshot + ReadAll: metadata, hardState, entries, plus every
      record of every .wal file decoded with etcd's WAL decoder with the CRC chain checked),
      "snap" (snap.New(dir).Load(): the newest .snap, its metadata and v2 store data),
      "bootstrap" (what etcd 3.6 does on start: the newest snapshot the WAL vouches for, the v2
      store recovered from it and checked for custom content, the WAL opened at it, the db's
      consistent index against it), "db" (as dump-db) and "etcdWarnings" (warnings etcd's
      packages logged).
  revisions FILE
      From the bbolt FILE: the latest revision and number of revision keys in bucket "key", and
      from "meta" scheduledCompactRev, finishedCompactRev, consistent_index, term (and
      confState, storageVersion when present), as JSON.
`

// finding is an error that is a result (exit 1), not a crash.
type finding struct{ msg string }

func (f *finding) Error() string { return f.msg }

func findingf(format string, a ...any) error { return &finding{fmt.Sprintf(format, a...)} }

type command struct {
	minArgs, maxArgs int
	run              func(args []string) error
}

var commands = map[string]command{
	"check-db":     {1, 2, runCheckDB},
	"dump-db":      {1, 1, runDumpDB},
	"dump-datadir": {1, 1, runDumpDatadir},
	"revisions":    {1, 1, runRevisions},
}

// childEnv marks the process that does the work: the parent re-executes itself so that a Go panic
// anywhere (bbolt's Check runs in its own goroutine, where a corrupt page can make it panic, and
// Go exits 2 on an unrecovered panic) still maps to exit status 1, never to 2 (usage).
const childEnv = "DATADIR_ORACLE_CHILD"

func main() {
	args := os.Args[1:]
	if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help") {
		fmt.Print(usage)
		os.Exit(0)
	}
	if len(args) == 0 {
		usageError("no command")
	}
	cmd, ok := commands[args[0]]
	if !ok {
		usageError("unknown command " + args[0])
	}
	rest := args[1:]
	if len(rest) < cmd.minArgs || len(rest) > cmd.maxArgs {
		usageError("wrong number of arguments for " + args[0])
	}
	if args[0] == "check-db" && len(rest) == 2 && rest[1] != "--write" {
		usageError("check-db: unknown option " + rest[1])
	}
	for i, a := range rest {
		if strings.HasPrefix(a, "-") && !(args[0] == "check-db" && i == 1) {
			usageError("unknown option " + a)
		}
	}

	if os.Getenv(childEnv) != "1" {
		os.Exit(runChild())
	}

	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "datadir-oracle %s: panic: %v\n", args[0], p)
			os.Exit(1)
		}
	}()
	if err := cmd.run(rest); err != nil {
		fmt.Fprintf(os.Stderr, "datadir-oracle %s: %v\n", args[0], err)
		os.Exit(1)
	}
}

func usageError(msg string) {
	fmt.Fprintf(os.Stderr, "datadir-oracle: %s\n%s", msg, usage)
	os.Exit(2)
}

// runChild runs this program again with the same arguments and maps every failure to 1.
func runChild() int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "datadir-oracle: cannot find own executable: %v\n", err)
		return 1
	}
	c := exec.Command(self, os.Args[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.Env = append(os.Environ(), childEnv+"=1")
	err = c.Run()
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ee.ExitCode() != 1 {
			fmt.Fprintf(os.Stderr, "datadir-oracle: crashed (%v): treated as a finding\n", ee)
		}
		return 1
	}
	fmt.Fprintf(os.Stderr, "datadir-oracle: %v\n", err)
	return 1
}

// writeJSON prints v as indented JSON; map keys come out sorted (encoding/json sorts them), so the
// output is canonical for a given input.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}
