/*
Copyright 2019 The Kubernetes Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package vfs: the part of kops' util/pkg/vfs that etcd-manager-ctl uses on local stores.
package vfs

import (
	"context"
	"fmt"
	"io"
	"strings"
)

type ACL interface{}

type Path interface {
	io.WriterTo
	Join(relativePath ...string) Path

	ReadFile(ctx context.Context) ([]byte, error)
	WriteFile(ctx context.Context, data io.ReadSeeker, acl ACL) error
	CreateFile(ctx context.Context, data io.ReadSeeker, acl ACL) error

	Remove(ctx context.Context) error
	RemoveAll(ctx context.Context) error
	RemoveAllVersions(ctx context.Context) error

	Base() string
	Path() string

	ReadDir() ([]Path, error)
	ReadTree(ctx context.Context) ([]Path, error)
}

type VFSContext struct{}

var Context = &VFSContext{}

// BuildVfsPath as kops' context.go does for local paths; other schemes are not built into this copy.
func (c *VFSContext) BuildVfsPath(p string) (Path, error) {
	if !strings.Contains(p, "://") {
		return NewFSPath(p), nil
	}
	if strings.HasPrefix(p, "file://") {
		f := strings.TrimPrefix(p, "file://")
		return NewFSPath(f), nil
	}
	return nil, fmt.Errorf("unknown / unhandled path type: %q (this test build of kops' vfs handles local stores only)", p)
}
