package main

// dump-datadir: an etcd data dir read with etcd 3.6's own packages (storage/wal,
// etcdserver/api/snap, etcdserver/api/v2store, raft), the way etcd reads it when it starts.

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"go.etcd.io/etcd/server/v3/config"
	"go.etcd.io/etcd/server/v3/etcdserver/api/snap"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v2store"
	serverstorage "go.etcd.io/etcd/server/v3/storage"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

type fileEntry struct {
	Path string `json:"path"` // relative to DIR, "." for DIR itself
	Type string `json:"type"` // dir, file, symlink, other
	Mode string `json:"mode"` // permission bits, octal
	Size *int64 `json:"size,omitempty"`
}

type confStateOut struct {
	Voters         []string `json:"voters"`
	Learners       []string `json:"learners"`
	VotersOutgoing []string `json:"votersOutgoing"`
	LearnersNext   []string `json:"learnersNext"`
	AutoLeave      bool     `json:"autoLeave"`
}

type walSnapshotOut struct {
	Index     uint64        `json:"index"`
	Term      uint64        `json:"term"`
	ConfState *confStateOut `json:"confState"` // null when the record has none (the initial empty one)
}

type hardStateOut struct {
	Term   uint64 `json:"term"`
	Vote   string `json:"vote"` // hex
	Commit uint64 `json:"commit"`
}

type metadataOut struct {
	Hex         string `json:"hex"`
	NodeID      string `json:"nodeID,omitempty"`    // hex
	ClusterID   string `json:"clusterID,omitempty"` // hex
	DecodeError string `json:"decodeError,omitempty"`
}

type confChangeOut struct {
	Type    string `json:"type"`
	NodeID  string `json:"nodeID"` // hex
	ID      uint64 `json:"id"`
	Context string `json:"context"`
}

type confChangeV2Out struct {
	Transition string              `json:"transition"`
	Changes    []map[string]string `json:"changes"` // {type, nodeID (hex)}
	Context    string              `json:"context"`
}

type entryOut struct {
	Term         uint64           `json:"term"`
	Index        uint64           `json:"index"`
	Type         string           `json:"type"`
	DataLen      int              `json:"dataLen"`
	ConfChange   *confChangeOut   `json:"confChange,omitempty"`
	ConfChangeV2 *confChangeV2Out `json:"confChangeV2,omitempty"`
	DataHex      *string          `json:"dataHex,omitempty"` // other entry types
}

type walFileOut struct {
	Name       string `json:"name"`
	Size       int64  `json:"size"`
	Records    int    `json:"records"`
	ValidBytes int64  `json:"validBytes"` // offset after the last record (the rest is zeros)
}

type walRecordOut struct {
	File     string          `json:"file"`
	Offset   int64           `json:"offset"`
	Type     int64           `json:"type"`
	TypeName string          `json:"typeName"`
	DataLen  int             `json:"dataLen"`
	CRC      string          `json:"crc"` // %08x
	RecBytes int64           `json:"recBytes"`
	PadBytes int64           `json:"padBytes"`
	Snapshot *walSnapshotOut `json:"snapshot,omitempty"`
	State    *hardStateOut   `json:"state,omitempty"`
	Entry    *[2]uint64      `json:"entry,omitempty"` // [term, index]
}

type walOut struct {
	Files              []walFileOut     `json:"files"`
	Records            []walRecordOut   `json:"records"`
	WalSnapshots       []walSnapshotOut `json:"walSnapshots"` // wal.ValidSnapshotEntries
	Metadata           metadataOut      `json:"metadata"`
	HardState          hardStateOut     `json:"hardState"`
	Entries            []entryOut       `json:"entries"`
	MinimalEtcdVersion *string          `json:"minimalEtcdVersion"` // wal.MinimalEtcdVersion(entries)
}

type snapMetaOut struct {
	Index     uint64       `json:"index"`
	Term      uint64       `json:"term"`
	ConfState confStateOut `json:"confState"`
}

type snapOut struct {
	Name           string      `json:"name"`
	Files          []string    `json:"files"` // every *.snap in member/snap
	Metadata       snapMetaOut `json:"metadata"`
	Data           string      `json:"data"`
	SnapDataParsed any         `json:"snapDataParsed"`
}

type bootstrapOut struct {
	Snapshot             *walSnapshotOut `json:"snapshot"` // snapshotter.LoadNewestAvailable(walSnaps); null if none
	V2StoreCheck         string          `json:"v2StoreCheck"`
	DBConsistentIndex    uint64          `json:"dbConsistentIndex"`
	WALOpenedAt          [2]uint64       `json:"walOpenedAt"` // [index, term]
	HardState            hardStateOut    `json:"hardState"`
	EntriesAfterSnapshot int             `json:"entriesAfterSnapshot"`
	NodeID               string          `json:"nodeID"`
	ClusterID            string          `json:"clusterID"`
	Raft                 map[string]any  `json:"raft"` // raft.NewRawNode on the MemoryStorage etcd builds: Status()
}

type warningOut struct {
	Level   string         `json:"level"`
	Message string         `json:"message"`
	Fields  map[string]any `json:"fields"`
}

type datadirOut struct {
	Files        []fileEntry   `json:"files"`
	WAL          *walOut       `json:"wal"`
	Snap         *snapOut      `json:"snap"` // null when member/snap has no .snap file
	Bootstrap    *bootstrapOut `json:"bootstrap"`
	DB           *dbDump       `json:"db"`
	Revisions    *revisionsOut `json:"revisions"`
	EtcdWarnings []warningOut  `json:"etcdWarnings"`
}

func hexIDs(ids []uint64) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprintf("%x", id)
	}
	return out
}

func confState(cs raftpb.ConfState) confStateOut {
	return confStateOut{hexIDs(cs.Voters), hexIDs(cs.Learners), hexIDs(cs.VotersOutgoing), hexIDs(cs.LearnersNext), cs.AutoLeave}
}

func walSnapshot(s walpb.Snapshot) walSnapshotOut {
	out := walSnapshotOut{Index: s.Index, Term: s.Term}
	if s.ConfState != nil {
		cs := confState(*s.ConfState)
		out.ConfState = &cs
	}
	return out
}

func hardState(s raftpb.HardState) hardStateOut {
	return hardStateOut{s.Term, fmt.Sprintf("%x", s.Vote), s.Commit}
}

func entry(e raftpb.Entry) (entryOut, error) {
	out := entryOut{Term: e.Term, Index: e.Index, Type: e.Type.String(), DataLen: len(e.Data)}
	switch e.Type {
	case raftpb.EntryConfChange:
		var cc raftpb.ConfChange
		if err := cc.Unmarshal(e.Data); err != nil {
			return out, findingf("entry %d: ConfChange does not decode: %v", e.Index, err)
		}
		out.ConfChange = &confChangeOut{cc.Type.String(), fmt.Sprintf("%x", cc.NodeID), cc.ID, string(cc.Context)}
	case raftpb.EntryConfChangeV2:
		var cc raftpb.ConfChangeV2
		if err := cc.Unmarshal(e.Data); err != nil {
			return out, findingf("entry %d: ConfChangeV2 does not decode: %v", e.Index, err)
		}
		v2 := &confChangeV2Out{Transition: cc.Transition.String(), Context: string(cc.Context), Changes: []map[string]string{}}
		for _, c := range cc.Changes {
			v2.Changes = append(v2.Changes, map[string]string{"type": c.Type.String(), "nodeID": fmt.Sprintf("%x", c.NodeID)})
		}
		out.ConfChangeV2 = v2
	default:
		h := hex.EncodeToString(e.Data)
		out.DataHex = &h
	}
	return out, nil
}

var recordTypeNames = map[int64]string{
	wal.MetadataType: "metadata",
	wal.EntryType:    "entry",
	wal.StateType:    "state",
	wal.CrcType:      "crc",
	wal.SnapshotType: "snapshot",
}

func listFiles(dir string) ([]fileEntry, error) {
	var files []fileEntry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e := fileEntry{Path: filepath.ToSlash(rel), Mode: fmt.Sprintf("%04o", fi.Mode().Perm())}
		switch {
		case fi.Mode().IsRegular():
			e.Type = "file"
			size := fi.Size()
			e.Size = &size
		case fi.IsDir():
			e.Type = "dir"
		case fi.Mode()&fs.ModeSymlink != 0:
			e.Type = "symlink"
		default:
			e.Type = "other"
		}
		files = append(files, e)
		return nil
	})
	return files, err
}

// walNames lists the *.wal files of dir in name order, as etcd's readWALNames does.
func walNames(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".wal") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, findingf("%s: no .wal file", dir)
	}
	return names, nil
}

// readRecords decodes every record of every .wal file with etcd's WAL decoder, strictly: each
// file must end in zeros after its last record (etcd stops at a zero length), no torn or
// truncated record, and the CRC chain must hold within and across files (each file starts with
// a crc record carrying the previous file's running CRC; etcd's ReadAll checks it the same way).
func readRecords(dir string, names []string, out *walOut) error {
	prevCRC := uint32(0)
	for i, name := range names {
		p := filepath.Join(dir, name)
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		d := wal.NewDecoder(fileutil.NewFileReader(f))
		if i > 0 {
			d.UpdateCRC(prevCRC)
		}
		fo := walFileOut{Name: name, Size: fi.Size()}
		rec := &walpb.Record{}
		for {
			off := d.LastOffset()
			err := d.Decode(rec)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				f.Close()
				return findingf("wal %s: record %d at offset %d: %v", name, fo.Records, off, err)
			}
			var lenField [8]byte
			if _, err := f.ReadAt(lenField[:], off); err != nil {
				f.Close()
				return err
			}
			l := int64(binary.LittleEndian.Uint64(lenField[:])) // decodeFrameSize's input
			recBytes := int64(uint64(l) & ^(uint64(0xff) << 56))
			var padBytes int64
			if l < 0 {
				padBytes = int64((uint64(l) >> 56) & 0x7)
			}
			ro := walRecordOut{
				File: name, Offset: off, Type: rec.Type, TypeName: recordTypeNames[rec.Type], DataLen: len(rec.Data),
				CRC: fmt.Sprintf("%08x", rec.Crc), RecBytes: recBytes, PadBytes: padBytes,
			}
			switch rec.Type {
			case wal.CrcType:
				if crc := d.LastCRC(); crc != 0 && rec.Validate(crc) != nil {
					f.Close()
					return findingf("wal %s: crc record at offset %d carries %08x, the running CRC is %08x (%v)", name, off, rec.Crc, crc, wal.ErrCRCMismatch)
				}
				d.UpdateCRC(rec.Crc)
			case wal.SnapshotType:
				var s walpb.Snapshot
				if err := s.Unmarshal(rec.Data); err != nil {
					f.Close()
					return findingf("wal %s: snapshot record at offset %d does not decode: %v", name, off, err)
				}
				so := walSnapshot(s)
				ro.Snapshot = &so
			case wal.StateType:
				var s raftpb.HardState
				if err := s.Unmarshal(rec.Data); err != nil {
					f.Close()
					return findingf("wal %s: state record at offset %d does not decode: %v", name, off, err)
				}
				so := hardState(s)
				ro.State = &so
			case wal.EntryType:
				var e raftpb.Entry
				if err := e.Unmarshal(rec.Data); err != nil {
					f.Close()
					return findingf("wal %s: entry record at offset %d does not decode: %v", name, off, err)
				}
				ro.Entry = &[2]uint64{e.Term, e.Index}
			case wal.MetadataType:
			default:
				f.Close()
				return findingf("wal %s: record at offset %d has unexpected type %d", name, off, rec.Type)
			}
			out.Records = append(out.Records, ro)
			fo.Records++
		}
		fo.ValidBytes = d.LastOffset()
		prevCRC = d.LastCRC()
		// Everything after the last record must be zero: etcd stops at the first zero length field
		// and would never see a record written after it.
		if _, err := f.Seek(fo.ValidBytes, io.SeekStart); err != nil {
			f.Close()
			return err
		}
		buf := make([]byte, 1<<20)
		pos := fo.ValidBytes
		for {
			n, err := f.Read(buf)
			if i := bytes.IndexFunc(buf[:n], func(r rune) bool { return r != 0 }); i >= 0 {
				f.Close()
				return findingf("wal %s: non-zero byte near offset %d after the last record (which ends at %d)", name, pos+int64(i), fo.ValidBytes)
			}
			pos += int64(n)
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return err
			}
		}
		f.Close()
		if fo.Records == 0 {
			return findingf("wal %s: no record", name)
		}
		out.Files = append(out.Files, fo)
	}
	return nil
}

func decodeMetadata(b []byte) metadataOut {
	out := metadataOut{Hex: hex.EncodeToString(b)}
	var m etcdserverpb.Metadata
	if err := m.Unmarshal(b); err != nil {
		out.DecodeError = err.Error()
	} else {
		out.NodeID, out.ClusterID = fmt.Sprintf("%x", m.NodeID), fmt.Sprintf("%x", m.ClusterID)
	}
	return out
}

func readWAL(lg *zap.Logger, dir string) (*walOut, error) {
	out := &walOut{Records: []walRecordOut{}, WalSnapshots: []walSnapshotOut{}, Entries: []entryOut{}}
	names, err := walNames(dir)
	if err != nil {
		return nil, err
	}
	if err := readRecords(dir, names, out); err != nil {
		return nil, err
	}

	snaps, err := wal.ValidSnapshotEntries(lg, dir)
	if err != nil {
		return nil, fmt.Errorf("wal.ValidSnapshotEntries: %w", err)
	}
	for _, s := range snaps {
		out.WalSnapshots = append(out.WalSnapshots, walSnapshot(s))
	}

	w, err := wal.OpenForRead(lg, dir, walpb.Snapshot{})
	if err != nil {
		return nil, fmt.Errorf("wal.OpenForRead at the zero snapshot: %w", err)
	}
	metadata, st, ents, err := w.ReadAll()
	w.Close()
	if err != nil {
		return nil, fmt.Errorf("wal ReadAll from the zero snapshot: %w", err)
	}
	out.Metadata = decodeMetadata(metadata)
	out.HardState = hardState(st)
	for _, e := range ents {
		eo, err := entry(e)
		if err != nil {
			return nil, err
		}
		out.Entries = append(out.Entries, eo)
	}
	if v := wal.MinimalEtcdVersion(ents); v != nil {
		s := v.String()
		out.MinimalEtcdVersion = &s
	}
	return out, nil
}

// preflightSnapDir fails on what snap.Snapshotter would silently change: it deletes db.tmp*
// files and renames an unreadable .snap to .snap.broken (and falls back to an older one). With
// this check first, Load() below leaves the directory as it was.
func preflightSnapDir(lg *zap.Logger, dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	snaps := []string{}
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "db.tmp"):
			return nil, findingf("%s: orphaned defragmentation file %s (etcd deletes it on start)", dir, name)
		case strings.HasSuffix(name, ".snap"):
			if _, err := snap.Read(lg, filepath.Join(dir, name)); err != nil {
				return nil, findingf("%s: snap.Read: %v (etcd renames it to %s.broken)", filepath.Join(dir, name), err, name)
			}
			snaps = append(snaps, name)
		}
	}
	sort.Strings(snaps)
	return snaps, nil
}

func readSnap(lg *zap.Logger, dir string) (*snapOut, error) {
	names, err := preflightSnapDir(lg, dir)
	if err != nil {
		return nil, err
	}
	s, err := snap.New(lg, dir).Load()
	if errors.Is(err, snap.ErrNoSnapshot) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("snap Load: %w", err)
	}
	m := s.Metadata
	name := fmt.Sprintf("%016x-%016x.snap", m.Term, m.Index) // how etcd's Snapshotter names it
	if names[len(names)-1] != name {
		return nil, findingf("%s: the newest .snap, %s, holds term %d index %d, so should be named %s", dir, names[len(names)-1], m.Term, m.Index, name)
	}
	out := &snapOut{
		Name:     name,
		Files:    names,
		Metadata: snapMetaOut{m.Index, m.Term, confState(m.ConfState)},
		Data:     string(s.Data),
	}
	dec := json.NewDecoder(bytes.NewReader(s.Data))
	dec.UseNumber()
	if err := dec.Decode(&out.SnapDataParsed); err != nil {
		return nil, findingf("%s: the snapshot's data is not JSON: %v", name, err)
	}
	if dec.More() {
		return nil, findingf("%s: the snapshot's data has more after its JSON value", name)
	}
	return out, nil
}

// bootstrap does what etcd 3.6's bootstrap (server/etcdserver/bootstrap.go) does with an
// existing data dir, read-only: recoverSnapshot, openWALFromSnapshot, bootstrapRaftFromWAL.
func bootstrap(lg *zap.Logger, walDir, snapDir string, ci *uint64) (*bootstrapOut, error) {
	out := &bootstrapOut{V2StoreCheck: "no snapshot"}
	walSnaps, err := wal.ValidSnapshotEntries(lg, walDir)
	if err != nil {
		return nil, fmt.Errorf("wal.ValidSnapshotEntries: %w", err)
	}
	snapshot, err := snap.New(lg, snapDir).LoadNewestAvailable(walSnaps)
	if err != nil && !errors.Is(err, snap.ErrNoSnapshot) {
		return nil, fmt.Errorf("snapshotter.LoadNewestAvailable: %w", err)
	}
	if ci != nil {
		out.DBConsistentIndex = *ci
	}
	var walsnap walpb.Snapshot
	if snapshot != nil {
		so := walSnapshotOut{Index: snapshot.Metadata.Index, Term: snapshot.Metadata.Term}
		cs := confState(snapshot.Metadata.ConfState)
		so.ConfState = &cs
		out.Snapshot = &so

		st := v2store.New("/0", "/1") // etcdserver.StoreClusterPrefix, StoreKeysPrefix
		if err := st.Recovery(snapshot.Data); err != nil {
			return nil, findingf("v2store Recovery from the snapshot: %v", err)
		}
		if err := serverstorage.AssertNoV2StoreContent(lg, st, config.V2DeprDefault); err != nil {
			return nil, findingf("v2 store in the snapshot: %v", err)
		}
		out.V2StoreCheck = "ok (membership only)"
		// recoverSnapshot with an existing backend.
		if out.DBConsistentIndex < snapshot.Metadata.Index {
			if out.DBConsistentIndex != 0 {
				return nil, findingf("database file (index %d) does not match with snapshot (index %d)", out.DBConsistentIndex, snapshot.Metadata.Index)
			}
			lg.Warn("consistent index was never saved", zap.Uint64("snapshot-index", snapshot.Metadata.Index))
		}
		walsnap.Index, walsnap.Term = snapshot.Metadata.Index, snapshot.Metadata.Term
	}
	out.WALOpenedAt = [2]uint64{walsnap.Index, walsnap.Term}

	w, err := wal.OpenForRead(lg, walDir, walsnap)
	if err != nil {
		return nil, fmt.Errorf("wal.OpenForRead at snapshot index %d term %d: %w", walsnap.Index, walsnap.Term, err)
	}
	metadata, hs, ents, err := w.ReadAll()
	w.Close()
	if err != nil {
		return nil, fmt.Errorf("wal ReadAll from snapshot index %d term %d: %w", walsnap.Index, walsnap.Term, err)
	}
	var md etcdserverpb.Metadata
	if err := md.Unmarshal(metadata); err != nil {
		return nil, findingf("WAL metadata is not an etcdserverpb.Metadata: %v", err)
	}
	out.HardState = hardState(hs)
	out.EntriesAfterSnapshot = len(ents)
	out.NodeID, out.ClusterID = fmt.Sprintf("%x", md.NodeID), fmt.Sprintf("%x", md.ClusterID)

	// bootstrappedWAL.MemoryStorage + raft.RestartNode (here the RawNode it wraps, with etcd's
	// raftConfig): raft's loadState panics if the commit index is outside [snapshot, last index].
	s := raft.NewMemoryStorage()
	if snapshot != nil {
		if err := s.ApplySnapshot(*snapshot); err != nil {
			return nil, findingf("raft MemoryStorage.ApplySnapshot: %v", err)
		}
	}
	if err := s.SetHardState(hs); err != nil {
		return nil, findingf("raft MemoryStorage.SetHardState: %v", err)
	}
	if len(ents) != 0 {
		if err := s.Append(ents); err != nil {
			return nil, findingf("raft MemoryStorage.Append: %v", err)
		}
	}
	rn, err := raft.NewRawNode(&raft.Config{
		ID: md.NodeID, ElectionTick: 10, HeartbeatTick: 1, Storage: s,
		MaxSizePerMsg: 1024 * 1024, MaxInflightMsgs: 4096 / 8, CheckQuorum: true, PreVote: true,
		Logger: &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)},
	})
	if err != nil {
		return nil, findingf("raft.NewRawNode: %v", err)
	}
	status := rn.Status()
	out.Raft = map[string]any{
		"id":       fmt.Sprintf("%x", status.ID),
		"term":     status.Term,
		"vote":     fmt.Sprintf("%x", status.Vote),
		"commit":   status.Commit,
		"applied":  status.Applied,
		"voters":   hexIDs(sortedIDs(status.Config.Voters.IDs())),
		"learners": hexIDs(sortedIDs(status.Config.Learners)),
	}
	return out, nil
}

func sortedIDs(m map[uint64]struct{}) []uint64 {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func runDumpDatadir(args []string) error {
	dir := args[0]
	core, logs := observer.New(zapcore.WarnLevel)
	lg := zap.New(core)
	out := &datadirOut{EtcdWarnings: []warningOut{}}
	var err error
	if out.Files, err = listFiles(dir); err != nil {
		return err
	}
	member := filepath.Join(dir, "member")
	walDir, snapDir, dbPath := filepath.Join(member, "wal"), filepath.Join(member, "snap"), filepath.Join(member, "snap", "db")
	for _, d := range []string{walDir, snapDir} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return findingf("%s is not a directory (%v)", d, err)
		}
	}
	if out.WAL, err = readWAL(lg, walDir); err != nil {
		return err
	}
	if out.Snap, err = readSnap(lg, snapDir); err != nil {
		return err
	}
	if out.DB, err = dumpDB(dbPath); err != nil {
		return err
	}
	db, err := openReadOnly(dbPath)
	if err != nil {
		return err
	}
	err = db.View(func(tx *bolt.Tx) error {
		out.Revisions, err = readRevisions(tx)
		return err
	})
	db.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", dbPath, err)
	}
	if out.Bootstrap, err = bootstrap(lg, walDir, snapDir, out.Revisions.ConsistentIndex); err != nil {
		return err
	}
	for _, e := range logs.All() {
		out.EtcdWarnings = append(out.EtcdWarnings, warningOut{e.Level.String(), e.Message, e.ContextMap()})
	}
	return writeJSON(os.Stdout, out)
}
