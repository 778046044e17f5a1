// A member another tool made and the kubelet runs from a static pod manifest (kubeadm's stacked
// etcd), taken over by etcdadm: described in etcdadm's terms (MemberConfig) from the manifest's
// etcd command, and given the files etcdadm keeps for a member it made (its state file, env file,
// etcdctl files and client certificate), so that etcdadm's commands and `etcdadm auto
// --kubeadm-manifest` act on it as on their own. The manifest itself is left as it is: the kubelet
// goes on running etcd as the other tool configured it (no restart) until etcdadm next changes the
// member, which then writes etcdadm's manifest in its place (the kubelet init system's configure).
#pragma once

#include <string>
#include <vector>

#include "etcdadm/member_config.h"
#include "etcdadm/static_pod.h"

namespace etcdadm {

// The member `pod` runs, as etcdadm would run it: its name, data dir, certificates folder,
// address and ports, the kubelet init system with the manifest's folder and file name, its version
// (`base.version` when given, else the image's tag), its image, quota and cipher suites, and the
// flags etcdadm has no setting for as extra variables. Everything else (config dir, install dir)
// comes from `base`. Throws kInvalidArgument naming what etcdadm could not run the same way:
// certificates not in one folder under etcdadm's names (ca, server, peer), client or peer URLs
// etcdadm would not listen on or advertise, TLS client authentication off, feature gates beyond the
// corruption checks etcdadm turns on itself, or an image whose tag names no version.
MemberConfig member_of_static_pod(const StaticPodEtcd& pod, MemberConfig base);

// The etcd flags of `pod` that member_env() has no setting for, as ETCD_* variables (a flag
// without a value is "true"), in the flags' order.
EnvVars unmanaged_flags_of(const StaticPodEtcd& pod);

struct StaticPodTakeOver {
  bool already = false;              // the config dir held the member's state file: nothing written
  std::vector<std::string> written;  // the files written, the state file last
  std::vector<std::string> issued;   // the certificates issued (the client pair etcdadm talks to it with)
};

// Writes what etcdadm keeps for `member` (member_of_static_pod of `pod`) unless its state file
// exists: the client certificates its CA (ca.key in the certs folder) issues and the folder lacks,
// the env file (the member as it runs: the manifest's initial cluster and token, state existing),
// the etcdctl files, and the state file, last, so that a kill midway is taken up again.
StaticPodTakeOver take_over_static_pod_member(const MemberConfig& member, const StaticPodEtcd& pod);

// The member of `etcdadm auto --kubeadm-manifest`: the one recorded in `base.config_dir` once taken
// over (its state file: the manifest may be etcdadm's own by then), else the one `manifest` runs
// (member_of_static_pod), taken over now. `base.version` empty: the image's.
MemberConfig static_pod_member(const std::string& manifest, const MemberConfig& base);

}  // namespace etcdadm
