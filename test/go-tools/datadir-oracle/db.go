package main

// check-db, dump-db and revisions: bbolt files read with go.etcd.io/bbolt.

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/server/v3/storage/schema"
)

const lockTimeout = 10 * time.Second

func openReadOnly(path string) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: lockTimeout})
	if err != nil {
		return nil, fmt.Errorf("bbolt open %s (read-only): %w", path, err)
	}
	return db, nil
}

// checkTx runs tx.Check() and returns every error it reports.
func checkTx(tx *bolt.Tx) []error {
	var errs []error
	for err := range tx.Check() {
		errs = append(errs, err)
	}
	return errs
}

func checkErrors(what string, errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = "  " + e.Error()
	}
	return findingf("%s: tx.Check() reported %d error(s):\n%s", what, len(errs), strings.Join(lines, "\n"))
}

// bucketName is how a top-level bucket is named in the JSON output.
func bucketName(name []byte) string {
	for _, c := range name {
		if c < 0x20 || c > 0x7e {
			return "0x" + hex.EncodeToString(name)
		}
	}
	return string(name)
}

// bucketStat is a bucket's key count (nested buckets' keys included) and a hash of its content.
type bucketStat struct {
	Keys int    `json:"keys"`
	Hash string `json:"sha256"`
}

// walkBucket feeds every (path, key, value) under b to h in cursor order and counts the keys.
func walkBucket(b *bolt.Bucket, h io.Writer) (int, error) {
	n := 0
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		n++
		var lenbuf [8]byte
		binary.BigEndian.PutUint64(lenbuf[:], uint64(len(k)))
		h.Write(lenbuf[:])
		h.Write(k)
		if v == nil {
			if child := b.Bucket(k); child != nil {
				h.Write([]byte{'B'})
				m, err := walkBucket(child, h)
				if err != nil {
					return 0, err
				}
				n += m
				h.Write([]byte{'E'})
				continue
			}
		}
		binary.BigEndian.PutUint64(lenbuf[:], uint64(len(v)))
		h.Write([]byte{'V'})
		h.Write(lenbuf[:])
		h.Write(v)
	}
	return n, nil
}

func bucketStats(tx *bolt.Tx) (map[string]bucketStat, error) {
	stats := map[string]bucketStat{}
	err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		h := sha256.New()
		n, err := walkBucket(b, h)
		if err != nil {
			return err
		}
		stats[bucketName(name)] = bucketStat{n, hex.EncodeToString(h.Sum(nil))}
		return nil
	})
	return stats, err
}

type checkSummary struct {
	PageSize      int                   `json:"pageSize"`
	DataSize      int64                 `json:"dataSize"`      // meta.pgid * pageSize
	FileSize      int64                 `json:"fileSize"`      // on disk
	TrailingBytes int64                 `json:"trailingBytes"` // fileSize - dataSize (32 for an etcd snapshot's SHA-256)
	Buckets       map[string]bucketStat `json:"buckets"`
	Write         *writeSummary         `json:"write,omitempty"`
}

type writeSummary struct {
	Bucket         string `json:"bucket"`
	KeysWritten    int    `json:"keysWritten"`
	DataSizeAfter  int64  `json:"dataSizeAfter"`
	DataSizeFinal  int64  `json:"dataSizeFinal"` // after the bucket was deleted again
	BucketsMatched int    `json:"bucketsMatched"`
}

func runCheckDB(args []string) error {
	path := args[0]
	write := len(args) == 2
	db, err := openReadOnly(path)
	if err != nil {
		return err
	}
	var sum checkSummary
	err = db.View(func(tx *bolt.Tx) error {
		if err := checkErrors(path, checkTx(tx)); err != nil {
			return err
		}
		sum.PageSize = db.Info().PageSize
		sum.DataSize = tx.Size()
		sum.Buckets, err = bucketStats(tx)
		return err
	})
	if cerr := db.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	sum.FileSize = fi.Size()
	sum.TrailingBytes = sum.FileSize - sum.DataSize
	if sum.TrailingBytes < 0 {
		return findingf("%s: file is %d bytes, shorter than its meta page's high water mark (%d bytes)", path, sum.FileSize, sum.DataSize)
	}
	if write {
		if sum.Write, err = writeCheck(path, sum.Buckets); err != nil {
			return err
		}
	}
	return writeJSON(os.Stdout, sum)
}

const (
	oracleBucket = "oracle-check"
	oracleKeys   = 1000
)

func oracleKV(i int) ([]byte, []byte) {
	k := []byte(fmt.Sprintf("k%06d", i))
	v := bytes.Repeat([]byte(fmt.Sprintf("v%06d-", i)), 1+i%37) // 8..296 bytes: several leaf pages, some spills
	return k, v
}

// writeCheck copies path into the temp dir, continues writing on it as etcd's bbolt would, and
// checks the result; the copy is removed.
func writeCheck(path string, before map[string]bucketStat) (*writeSummary, error) {
	src, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	tmp, err := os.CreateTemp("", "datadir-oracle-*.db")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	copyPath := tmp.Name()
	if _, ok := before[oracleBucket]; ok {
		return nil, findingf("%s already has a bucket %q", path, oracleBucket)
	}

	opts := *bolt.DefaultOptions
	opts.Timeout = lockTimeout
	open := func(stage string) (*bolt.DB, error) {
		db, err := bolt.Open(copyPath, 0o600, &opts)
		if err != nil {
			return nil, fmt.Errorf("--write: bbolt open of the copy (%s): %w", stage, err)
		}
		return db, nil
	}
	// verify reopens the copy, runs Check and compares the pre-existing buckets with `before`.
	verify := func(stage string, wantOracle bool) (int64, int, error) {
		db, err := open(stage)
		if err != nil {
			return 0, 0, err
		}
		defer db.Close()
		var size int64
		matched := 0
		err = db.View(func(tx *bolt.Tx) error {
			if err := checkErrors("--write ("+stage+")", checkTx(tx)); err != nil {
				return err
			}
			size = tx.Size()
			after, err := bucketStats(tx)
			if err != nil {
				return err
			}
			for name, st := range before {
				got, ok := after[name]
				switch {
				case !ok:
					return findingf("--write (%s): bucket %q is gone", stage, name)
				case got.Keys != st.Keys:
					return findingf("--write (%s): bucket %q had %d keys, now %d", stage, name, st.Keys, got.Keys)
				case got.Hash != st.Hash:
					return findingf("--write (%s): bucket %q has the same key count but different content", stage, name)
				}
				matched++
			}
			for name := range after {
				if _, ok := before[name]; !ok && !(wantOracle && name == oracleBucket) {
					return findingf("--write (%s): unexpected bucket %q", stage, name)
				}
			}
			b := tx.Bucket([]byte(oracleBucket))
			if !wantOracle {
				if b != nil {
					return findingf("--write (%s): bucket %q still there after its deletion", stage, oracleBucket)
				}
				return nil
			}
			if b == nil {
				return findingf("--write (%s): bucket %q missing after commit and reopen", stage, oracleBucket)
			}
			if n := b.Stats().KeyN; n != oracleKeys {
				return findingf("--write (%s): bucket %q has %d keys, want %d", stage, oracleBucket, n, oracleKeys)
			}
			for i := 0; i < oracleKeys; i++ {
				k, v := oracleKV(i)
				if got := b.Get(k); !bytes.Equal(got, v) {
					return findingf("--write (%s): key %q reads back %q, want %q", stage, k, got, v)
				}
			}
			return nil
		})
		return size, matched, err
	}

	// 1. open read-write (a file without a synced freelist gets one now), add the bucket.
	db, err := open("write")
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte(oracleBucket))
		if err != nil {
			return err
		}
		for i := 0; i < oracleKeys; i++ {
			k, v := oracleKV(i)
			if err := b.Put(k, v); err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := db.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("--write: writing %d keys: %w", oracleKeys, err)
	}
	sizeAfter, matched, err := verify("after write", true)
	if err != nil {
		return nil, err
	}

	// 2. delete the bucket again: its pages go to the freelist, which must stay consistent.
	if db, err = open("delete"); err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte(oracleBucket)) })
	if cerr := db.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("--write: deleting bucket %q: %w", oracleBucket, err)
	}
	sizeFinal, _, err := verify("after delete", false)
	if err != nil {
		return nil, err
	}
	return &writeSummary{oracleBucket, oracleKeys, sizeAfter, sizeFinal, matched}, nil
}

type dbDump struct {
	PageSize int                       `json:"pageSize"`
	DataSize int64                     `json:"dataSize"`
	FileSize int64                     `json:"fileSize"`
	Buckets  map[string]map[string]any `json:"buckets"`
}

func dumpBucket(b *bolt.Bucket) map[string]any {
	out := map[string]any{}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil {
			if child := b.Bucket(k); child != nil {
				out[hex.EncodeToString(k)] = dumpBucket(child)
				continue
			}
		}
		out[hex.EncodeToString(k)] = hex.EncodeToString(v)
	}
	return out
}

// dumpDB checks path with tx.Check() and returns its canonical dump.
func dumpDB(path string) (*dbDump, error) {
	db, err := openReadOnly(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	d := &dbDump{PageSize: db.Info().PageSize, Buckets: map[string]map[string]any{}}
	err = db.View(func(tx *bolt.Tx) error {
		if err := checkErrors(path, checkTx(tx)); err != nil {
			return err
		}
		d.DataSize = tx.Size()
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			d.Buckets[bucketName(name)] = dumpBucket(b)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	d.FileSize = fi.Size()
	return d, nil
}

func runDumpDB(args []string) error {
	d, err := dumpDB(args[0])
	if err != nil {
		return err
	}
	return writeJSON(os.Stdout, d)
}

// revision is mvcc's bucket key: 8-byte big-endian main, '_', 8-byte big-endian sub, and an
// optional 't' (tombstone) mark.
type revision struct {
	Main      int64 `json:"main"`
	Sub       int64 `json:"sub"`
	Tombstone bool  `json:"tombstone,omitempty"`
}

func decodeRevision(b []byte, allowMark bool) (revision, error) {
	if !(len(b) == 17 || (allowMark && len(b) == 18)) || b[8] != '_' || (len(b) == 18 && b[17] != 't') {
		return revision{}, fmt.Errorf("not a revision (main BE8 '_' sub BE8%s): %x", map[bool]string{true: " ['t']", false: ""}[allowMark], b)
	}
	return revision{
		Main:      int64(binary.BigEndian.Uint64(b[:8])),
		Sub:       int64(binary.BigEndian.Uint64(b[9:17])),
		Tombstone: len(b) == 18,
	}, nil
}

type revisionsOut struct {
	LatestMainRevision  int64     `json:"latestMainRevision"`
	LatestRevision      *revision `json:"latestRevision"` // the last key of bucket "key"; null when empty
	RevisionKeys        int       `json:"revisionKeys"`
	Tombstones          int       `json:"tombstones"`
	ScheduledCompactRev *revision `json:"scheduledCompactRev"` // null when absent
	FinishedCompactRev  *revision `json:"finishedCompactRev"`
	ConsistentIndex     *uint64   `json:"consistentIndex"`
	Term                *uint64   `json:"term"`
	ConfState           *string   `json:"confState,omitempty"`
	StorageVersion      *string   `json:"storageVersion,omitempty"`
	MetaKeys            []string  `json:"metaKeys"` // every key of bucket "meta", as text
}

func readRevisions(tx *bolt.Tx) (*revisionsOut, error) {
	out := &revisionsOut{MetaKeys: []string{}}
	kb := tx.Bucket(schema.Key.Name())
	if kb == nil {
		return nil, findingf("no bucket %q", schema.Key.Name())
	}
	c := kb.Cursor()
	var prev *revision
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		r, err := decodeRevision(k, true)
		if err != nil {
			return nil, findingf("bucket key: %v", err)
		}
		if prev != nil && (r.Main < prev.Main || (r.Main == prev.Main && r.Sub <= prev.Sub)) {
			return nil, findingf("bucket key: revision %d_%d does not follow %d_%d", r.Main, r.Sub, prev.Main, prev.Sub)
		}
		out.RevisionKeys++
		if r.Tombstone {
			out.Tombstones++
		}
		rr := r
		prev = &rr
	}
	out.LatestRevision = prev
	if prev != nil {
		out.LatestMainRevision = prev.Main
	}

	mb := tx.Bucket(schema.Meta.Name())
	if mb == nil {
		return nil, findingf("no bucket %q", schema.Meta.Name())
	}
	_ = mb.ForEach(func(k, _ []byte) error {
		out.MetaKeys = append(out.MetaKeys, string(k))
		return nil
	})
	rev := func(key []byte) (*revision, error) {
		v := mb.Get(key)
		if v == nil {
			return nil, nil
		}
		r, err := decodeRevision(v, false)
		if err != nil {
			return nil, findingf("meta %s: %v", key, err)
		}
		return &r, nil
	}
	u64 := func(key []byte) (*uint64, error) {
		v := mb.Get(key)
		if v == nil {
			return nil, nil
		}
		if len(v) != 8 {
			return nil, findingf("meta %s: %d bytes, want 8 (big-endian uint64): %x", key, len(v), v)
		}
		n := binary.BigEndian.Uint64(v)
		return &n, nil
	}
	str := func(key []byte) *string {
		if v := mb.Get(key); v != nil {
			s := string(v)
			return &s
		}
		return nil
	}
	var err error
	if out.ScheduledCompactRev, err = rev(schema.ScheduledCompactKeyName); err != nil {
		return nil, err
	}
	if out.FinishedCompactRev, err = rev(schema.FinishedCompactKeyName); err != nil {
		return nil, err
	}
	if out.ConsistentIndex, err = u64(schema.MetaConsistentIndexKeyName); err != nil {
		return nil, err
	}
	if out.Term, err = u64(schema.MetaTermKeyName); err != nil {
		return nil, err
	}
	out.ConfState = str(schema.MetaConfStateName)
	out.StorageVersion = str(schema.MetaStorageVersionName)
	return out, nil
}

func runRevisions(args []string) error {
	db, err := openReadOnly(args[0])
	if err != nil {
		return err
	}
	defer db.Close()
	var out *revisionsOut
	if err := db.View(func(tx *bolt.Tx) error {
		out, err = readRevisions(tx)
		return err
	}); err != nil {
		return err
	}
	return writeJSON(os.Stdout, out)
}
