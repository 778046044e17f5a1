// etcd-manager-ctl from kubernetes-sigs/etcd-manager at commit ad35ed6691d8 (tag v3.0.20260707), the
// packages it needs copied unchanged (Apache-2.0, LICENSE): a test oracle, never shipped. The Go
// module proxy withholds this module (docs/testing.md), so its source is kept here.
module sigs.k8s.io/etcd-manager

go 1.25.8

require (
	google.golang.org/grpc v1.79.3
	google.golang.org/protobuf v1.36.11
	k8s.io/klog/v2 v2.140.0
	k8s.io/kops v1.35.0-beta.1.0.20260331142617-440ba636295e
)

require (
	github.com/go-logr/logr v1.4.3 // indirect
	go.opentelemetry.io/otel v1.42.0 // indirect
	go.opentelemetry.io/otel/sdk/metric v1.42.0 // indirect
	golang.org/x/net v0.56.0 // indirect
	golang.org/x/sys v0.46.0 // indirect
	golang.org/x/text v0.39.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260319201613-d00831a3d3e7 // indirect
)

// Only kops' local-filesystem vfs: see kops-vfs/go.mod.
replace k8s.io/kops => ./kops-vfs
