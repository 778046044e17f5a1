// kubewatch: a test oracle (never shipped) that plays the clients of a kube-apiserver while etcdadm
// works on the etcd beneath it, and records what they saw. Built and pinned by
// scripts/go-test-tools.sh (test/go-tools/tools); found with `scripts/go-test-tools.sh --where
// kubewatch`.
//
//	kubewatch -kubeconfig FILE -namespace NS -out FILE [-write-every 100ms] [-ready FILE] [-status FILE]
//
// Until SIGTERM or SIGINT it runs, in one namespace, through client-go as a controller would:
//   - a writer (with -write-every) creating ConfigMaps `w-<n>` one at a time, each request with a
//     5 s timeout; every answer is kept (acknowledged: name and resourceVersion; refused: the
//     error's reason);
//   - a raw watch of the namespace's ConfigMaps, started at a list's resourceVersion and resumed
//     from the last one seen whenever the server closes it, with bookmarks; a 410 (Expired/Gone)
//     makes it list again (RV "", a consistent read) and watch on from that list;
//   - a shared informer (resync off) whose list and watch errors are counted, and whose
//     LastSyncResourceVersion is sampled every 50 ms.
//
// The informer lists through plain LIST requests (the WatchListClient gate is turned off), so
// each of its lists after the first is a re-list that can be counted.
//
// With -ready FILE, the file is written once the informer has synced and the raw watch started.
// With -status FILE, the summary so far (without "acked"; watch.missingAcked not computed) is
// written there every 250 ms, replaced atomically, so that a test can wait for what the clients see.
// On SIGTERM the writer stops, the watch is given 5 s to deliver the last acknowledged write,
// and a summary is written to -out as JSON (then exit 0):
//
//	{"writes": {"ok", "failed", "errors": {reason: count}, "longestGapMs", "longestGapEnd",
//	            "failures": [{"at", "reason"}, ...], "lastAckedRv"},
//	 "watch": {"events", "duplicates", "backwards", "gone", "relists", "reconnects",
//	           "watchErrors", "missingAcked", "firstMissing", "maxRv"},
//	 "informer": {"lists", "watchErrors", "expired", "rvBackwards", "firstRv", "lastRv",
//	              "adds", "updates", "deletes", "objects"},
//	 "acked": ["name@rv", ...]}
//
// writes.longestGapMs: the longest time between two acknowledged writes (the API's longest
// unavailability for writes, plus at most one -write-every); longestGapEnd: when it ended (RFC 3339,
// nanoseconds, UTC), and failures: when the first 20 failed writes gave up and why, so that a test
// can set them beside the logs of what the cluster did then. watch.duplicates: an event whose
// resourceVersion is not above the last one this watch saw (before any relist); watch.backwards:
// a resourceVersion below the highest seen, from a list or an event after a relist (the revision
// went backwards); watch.missingAcked: acknowledged writes whose ADDED event never came (only
// meaningful while no relist happened). informer.rvBackwards: samples of LastSyncResourceVersion
// lower than an earlier one. Resource versions are etcd's mod revisions (decimal), which the
// apiserver's etcd3 storage guarantees.
//
// Bad flags or an unreachable configuration: a message on stderr, exit 2.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

type writeSummary struct {
	OK            int            `json:"ok"`
	Failed        int            `json:"failed"`
	Errors        map[string]int `json:"errors"`
	LongestGapMs  int64          `json:"longestGapMs"`
	LongestGapEnd string         `json:"longestGapEnd"`
	Failures      []writeFailure `json:"failures"`
	LastAckedRv   uint64         `json:"lastAckedRv"`
}

type writeFailure struct {
	At     string `json:"at"`
	Reason string `json:"reason"`
}

const keptFailures = 20

type watchSummary struct {
	Events       int    `json:"events"`
	Duplicates   int    `json:"duplicates"`
	Backwards    int    `json:"backwards"`
	Gone         int    `json:"gone"`
	Relists      int    `json:"relists"`
	Reconnects   int    `json:"reconnects"`
	WatchErrors  int    `json:"watchErrors"`
	MissingAcked int    `json:"missingAcked"`
	FirstMissing string `json:"firstMissing"`
	MaxRv        uint64 `json:"maxRv"`
}

type informerSummary struct {
	Lists       int    `json:"lists"`
	WatchErrors int    `json:"watchErrors"`
	Expired     int    `json:"expired"`
	RvBackwards int    `json:"rvBackwards"`
	FirstRv     uint64 `json:"firstRv"`
	LastRv      uint64 `json:"lastRv"`
	Adds        int    `json:"adds"`
	Updates     int    `json:"updates"`
	Deletes     int    `json:"deletes"`
	Objects     int    `json:"objects"`
}

type summary struct {
	Writes   writeSummary    `json:"writes"`
	Watch    watchSummary    `json:"watch"`
	Informer informerSummary `json:"informer"`
	Acked    []string        `json:"acked"`
}

// recorder holds what every client saw; one mutex, the event rates here are small.
type recorder struct {
	mu       sync.Mutex
	s        summary
	acked    map[string]uint64 // name -> resourceVersion of its acknowledged create
	seenAdds map[string]uint64 // name -> resourceVersion of its ADDED event on the raw watch
}

func parseRv(rv string) uint64 {
	v, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0
	}
	return v
}

func errorReason(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "Timeout"
	}
	if status, ok := err.(apierrors.APIStatus); ok {
		st := status.Status()
		return fmt.Sprintf("%d %s", st.Code, st.Reason)
	}
	return "NoAnswer"
}

func (r *recorder) write(ctx context.Context, cs *kubernetes.Clientset, ns string, every time.Duration) {
	lastOK := time.Now()
	for n := 1; ctx.Err() == nil; n++ {
		name := fmt.Sprintf("w-%d", n)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"n": strconv.Itoa(n)}}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		got, err := cs.CoreV1().ConfigMaps(ns).Create(rctx, cm, metav1.CreateOptions{})
		cancel()
		now := time.Now()
		r.mu.Lock()
		switch {
		case err == nil:
			r.s.Writes.OK++
			rv := parseRv(got.ResourceVersion)
			r.acked[name] = rv
			r.s.Acked = append(r.s.Acked, name+"@"+got.ResourceVersion)
			if rv > r.s.Writes.LastAckedRv {
				r.s.Writes.LastAckedRv = rv
			}
			if gap := now.Sub(lastOK).Milliseconds(); gap > r.s.Writes.LongestGapMs {
				r.s.Writes.LongestGapMs = gap
				r.s.Writes.LongestGapEnd = now.UTC().Format(time.RFC3339Nano)
			}
			lastOK = now
		case ctx.Err() != nil: // stopped mid-request: not the server's failure
		default:
			r.s.Writes.Failed++
			r.s.Writes.Errors[errorReason(err)]++
			if len(r.s.Writes.Failures) < keptFailures {
				r.s.Writes.Failures = append(r.s.Writes.Failures,
					writeFailure{At: now.UTC().Format(time.RFC3339Nano), Reason: errorReason(err)})
			}
			// A name whose create timed out may exist; the next write takes a fresh name.
		}
		r.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(every):
		}
	}
}

// rawWatch follows the namespace's ConfigMaps from a list's resourceVersion on.
func (r *recorder) rawWatch(ctx context.Context, cs *kubernetes.Clientset, ns string, started chan<- struct{}) {
	api := cs.CoreV1().ConfigMaps(ns)
	var last, max uint64
	relist := func(first bool) bool {
		l, err := api.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		rv := parseRv(l.ResourceVersion)
		r.mu.Lock()
		if !first {
			r.s.Watch.Relists++
		}
		if rv < max {
			r.s.Watch.Backwards++
		}
		r.mu.Unlock()
		last = rv
		if rv > max {
			max = rv
		}
		return true
	}
	for !relist(true) {
		if ctx.Err() != nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	close(started)
	relisted := false
	// A watch error is counted; a 410 (the resourceVersion is compacted away) makes it list again.
	// Returns whether it did.
	onError := func(err error) bool {
		r.mu.Lock()
		r.s.Watch.WatchErrors++
		gone := apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
		if gone {
			r.s.Watch.Gone++
		}
		r.mu.Unlock()
		if gone {
			for !relist(false) && ctx.Err() == nil {
				time.Sleep(200 * time.Millisecond)
			}
			relisted = true
		}
		return gone
	}
	for ctx.Err() == nil {
		w, err := api.Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatUint(last, 10), AllowWatchBookmarks: true})
		if err != nil && ctx.Err() != nil {
			break // stopped
		}
		if err != nil {
			if !onError(err) {
				time.Sleep(200 * time.Millisecond)
			}
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				if onError(apierrors.FromObject(ev.Object)) {
					w.Stop()
				}
				continue
			}
			obj, ok := ev.Object.(metav1.Object)
			if !ok {
				continue
			}
			rv := parseRv(obj.GetResourceVersion())
			r.mu.Lock()
			if ev.Type != watch.Bookmark {
				r.s.Watch.Events++
				if rv <= last && !relisted {
					r.s.Watch.Duplicates++
				}
				if rv < max && relisted {
					r.s.Watch.Backwards++
				}
				if ev.Type == watch.Added {
					r.seenAdds[obj.GetName()] = rv
				}
			}
			r.mu.Unlock()
			if rv > last {
				last = rv
			}
			if rv > max {
				max = rv
			}
		}
		if ctx.Err() == nil {
			r.mu.Lock()
			r.s.Watch.Reconnects++
			r.mu.Unlock()
		}
	}
	r.mu.Lock()
	r.s.Watch.MaxRv = max
	r.mu.Unlock()
}

func (r *recorder) informer(ctx context.Context, cs *kubernetes.Clientset, ns string) cache.SharedIndexInformer {
	api := cs.CoreV1().ConfigMaps(ns)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			r.mu.Lock()
			r.s.Informer.Lists++
			r.mu.Unlock()
			return api.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return api.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		r.mu.Lock()
		r.s.Informer.WatchErrors++
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			r.s.Informer.Expired++
		}
		r.mu.Unlock()
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(any, bool) { r.mu.Lock(); r.s.Informer.Adds++; r.mu.Unlock() },
		UpdateFunc: func(any, any) { r.mu.Lock(); r.s.Informer.Updates++; r.mu.Unlock() },
		DeleteFunc: func(any) { r.mu.Lock(); r.s.Informer.Deletes++; r.mu.Unlock() },
	})
	go inf.RunWithContext(ctx)
	return inf
}

func (r *recorder) sampleInformer(ctx context.Context, inf cache.SharedIndexInformer) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		rv := parseRv(inf.LastSyncResourceVersion())
		r.mu.Lock()
		if rv != 0 {
			if r.s.Informer.FirstRv == 0 {
				r.s.Informer.FirstRv = rv
			}
			if rv < r.s.Informer.LastRv {
				r.s.Informer.RvBackwards++
			}
			r.s.Informer.LastRv = rv
		}
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kubewatch: "+format+"\n", args...)
	os.Exit(2)
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server (required)")
	ns := flag.String("namespace", "default", "namespace to write and watch ConfigMaps in")
	out := flag.String("out", "", "file the summary is written to on SIGTERM (required)")
	ready := flag.String("ready", "", "file written once the informer synced and the raw watch started")
	every := flag.Duration("write-every", 0, "create a ConfigMap this often (0: no writes)")
	status := flag.String("status", "", "file the summary so far is written to every 250 ms")
	flag.Parse()
	if *kubeconfig == "" || *out == "" || flag.NArg() != 0 {
		fail("usage: kubewatch -kubeconfig FILE -out FILE [-namespace NS] [-write-every D] [-ready FILE]")
	}
	// Plain LIST requests for the informer, so that each re-list is a request that can be counted.
	os.Setenv("KUBE_FEATURE_WatchListClient", "false")
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail("%v", err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fail("%v", err)
	}

	rec := &recorder{acked: map[string]uint64{}, seenAdds: map[string]uint64{}}
	rec.s.Writes.Errors = map[string]int{}
	rec.s.Writes.Failures = []writeFailure{}
	rec.s.Acked = []string{}
	stop, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	watchCtx, stopWatch := context.WithCancel(context.Background())
	var watching sync.WaitGroup
	started := make(chan struct{})
	watching.Add(1)
	go func() { defer watching.Done(); rec.rawWatch(watchCtx, cs, *ns, started) }()
	inf := rec.informer(watchCtx, cs, *ns)
	go rec.sampleInformer(watchCtx, inf)
	select {
	case <-started:
	case <-stop.Done():
	}
	if !cache.WaitForCacheSync(stop.Done(), inf.HasSynced) && stop.Err() == nil {
		fail("the informer did not sync")
	}
	if *ready != "" && stop.Err() == nil {
		if err := os.WriteFile(*ready, []byte("ready\n"), 0o644); err != nil {
			fail("%v", err)
		}
	}
	if *status != "" {
		go rec.writeStatus(watchCtx, inf, *status)
	}
	var writing sync.WaitGroup
	if *every > 0 {
		writing.Add(1)
		go func() { defer writing.Done(); rec.write(stop, cs, *ns, *every) }()
	}
	<-stop.Done()
	writing.Wait()

	// Give the raw watch a moment to deliver the last acknowledged write.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		rec.mu.Lock()
		_, seen := rec.seenAdds[lastAckedName(rec)]
		done := len(rec.acked) == 0 || seen
		rec.mu.Unlock()
		if done {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopWatch()
	watching.Wait()

	rec.mu.Lock()
	defer rec.mu.Unlock()
	var missing []string
	for name, rv := range rec.acked {
		if seen, ok := rec.seenAdds[name]; !ok || seen != rv {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	rec.s.Watch.MissingAcked = len(missing)
	if len(missing) > 0 {
		rec.s.Watch.FirstMissing = missing[0]
	}
	rec.s.Informer.Objects = len(inf.GetStore().ListKeys())
	data, err := json.MarshalIndent(rec.s, "", " ")
	if err != nil {
		fail("%v", err)
	}
	tmp := *out + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		fail("%v", err)
	}
	if err := os.Rename(tmp, *out); err != nil {
		fail("%v", err)
	}
}

// writeStatus replaces `path` with the summary so far every 250 ms until ctx ends.
func (r *recorder) writeStatus(ctx context.Context, inf cache.SharedIndexInformer, path string) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		r.mu.Lock()
		s := r.s
		s.Acked = nil
		s.Informer.Objects = len(inf.GetStore().ListKeys())
		data, err := json.Marshal(s)
		r.mu.Unlock()
		if err == nil && os.WriteFile(path+".tmp", data, 0o644) == nil {
			_ = os.Rename(path+".tmp", path)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// lastAckedName is the name of the newest acknowledged write (the caller holds rec.mu).
func lastAckedName(rec *recorder) string {
	var name string
	var max uint64
	for n, rv := range rec.acked {
		if rv >= max {
			name, max = n, rv
		}
	}
	return name
}
