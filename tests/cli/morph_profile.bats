#!/usr/bin/env bats
# morph-profile topo on this machine and on the saved topologies of tests/profiler, its
# --help, and its one-line errors. (bandwidth needs srun: tests/cluster/profiler.bats.)

bats_require_minimum_version 1.5.0
load common

XML_DIR() { echo "$MORPH_SRCDIR/tests/profiler"; }

# profile ARGS...: run morph-profile with stdout and stderr kept apart.
profile() {
  local bin="$MORPH_BUILDDIR/profiler/morph-profile"
  [ -x "$bin" ] || skip "no morph-profile in $MORPH_BUILDDIR (configure found no hwloc or no Open MPI)"
  run --separate-stderr "$bin" "$@"
}

# assert_profile_error WORD...: a non-zero exit, neither 70 (internal error) nor a crash
# (>= 126), nothing on stdout, one line on
# stderr starting with "morph-profile:" and containing every WORD.
assert_profile_error() {
  local n=0 word
  [ -z "$stderr" ] || n=$(printf '%s\n' "$stderr" | wc -l)
  if [ "$status" -eq 0 ] || [ "$status" -eq 70 ] || [ "$status" -ge 126 ] || [ -n "$output" ] || [ "$n" -ne 1 ] ||
    [[ "$stderr" != "morph-profile: "* ]]; then
    show_run
    fail "expected a one-line morph-profile error"
  fi
  for word in "$@"; do
    [[ "$stderr" == *"$word"* ]] || { show_run; fail "stderr does not mention '$word'"; }
  done
}

@test "morph-profile --help lists the subcommands and --config" {
  profile --help
  assert_ok
  for word in 'Usage: morph-profile' --config topo bandwidth job; do
    [[ "$output" == *"$word"* ]] || { show_run; fail "--help does not mention '$word'"; }
  done
}

@test "morph-profile topo --help and bandwidth --help list their options" {
  profile topo --help
  assert_ok
  for word in --topology --json; do [[ "$output" == *"$word"* ]] || { show_run; fail "no $word"; }; done
  profile bandwidth --help
  assert_ok
  for word in --sizes --iters --out; do [[ "$output" == *"$word"* ]] || { show_run; fail "no $word"; }; done
}

@test "topo on this machine prints GPUs, NICs and NUMA nodes" {
  profile topo
  assert_ok
  [[ "${lines[0]}" == "this machine"*" PUs, "*" NUMA node"* ]] || { show_run; fail "no summary line"; }
  for section in GPUs NICs 'NUMA nodes'; do
    grep -qx "$section" <<<"$output" || { show_run; fail "no '$section' section"; }
  done
  grep -qE '^  NUMA 0  CPUs [0-9]' <<<"$output" || { show_run; fail "no NUMA 0 line"; }
}

@test "topo --json on this machine counts what the system counts" {
  require_jq
  profile topo --json
  assert_ok
  f=$(save_json this)
  jq_true "$f" '.source == "this machine" and (.numa_nodes | length) >= 1'
  jq_true "$f" '.pus == $n' --argjson n "$(getconf _NPROCESSORS_CONF)"
}

@test "topo on the DGX A100: 8 A100 on PCIe gen4 x16, NVSwitch peers, 4 HCAs beside 2 GPUs each" {
  profile topo --topology "$(XML_DIR)/dgx-a100.xml"
  assert_ok
  [ "$(grep -cE '^  GPU[0-7] NVIDIA A100-SXM4-80GB .*PCIe gen4 x16 \(31\.5 GB/s\)  NUMA [01]' <<<"$output")" -eq 8 ] ||
    { show_run; fail "not 8 A100 lines with gen4 x16"; }
  [ "$(grep -c '^    NVLink (NVSwitch): ' <<<"$output")" -eq 8 ] || { show_run; fail "not 8 NVLink lines"; }
  grep -q '^    NVLink (NVSwitch): GPU1 300 GB/s, GPU2 300 GB/s, GPU3 300 GB/s, GPU4 300 GB/s, GPU5 300 GB/s, GPU6 300 GB/s, GPU7 300 GB/s$' <<<"$output" ||
    { show_run; fail "GPU0's peers"; }
  grep -q '^  NVSwitches: 6$' <<<"$output" || { show_run; fail "no NVSwitch count"; }
  grep -q '^  mlx5_2 InfiniBand .*NUMA 1$' <<<"$output" || { show_run; fail "no mlx5_2 on NUMA 1"; }
  grep -q '^    same PCIe switch: GPU4,5; same NUMA node: GPU4,5,6,7$' <<<"$output" || { show_run; fail "mlx5_2's GPUs"; }
}

@test "topo --json on the DGX A100" {
  require_jq
  profile topo --json --topology "$(XML_DIR)/dgx-a100.xml"
  assert_ok
  f=$(save_json dgx)
  jq_true "$f" '(.gpus | length) == 8 and .nvswitches == 6 and .packages == 2 and .pus == 256'
  jq_true "$f" 'all(.gpus[]; .pcie.generation == 4 and .pcie.width == 16 and (.nvlink_peers | length) == 7)'
  jq_true "$f" 'all(.gpus[].nvlink_peers[]; .via_nvswitch and .bandwidth_GBps == 300)'
  jq_true "$f" '[.gpus[] | .numa_node] == [0,0,0,0,1,1,1,1]'
  jq_true "$f" '[.nics[] | select(.kind == "infiniband") | .gpus_same_switch] == [[0,1],[2,3],[4,5],[6,7]]'
  jq_true "$f" '.gpus[0].cpus == "0-63,128-191" and .numa_nodes[1].cpus == "64-127,192-255"'
}

@test "topo on the PCIe node: 4 GPUs without NVLink, one Ethernet NIC on PCIe gen3 x8" {
  profile topo --topology "$(XML_DIR)/pcie-node.xml"
  assert_ok
  [ "$(grep -cE '^  GPU[0-3] NVIDIA L40S .*PCIe gen4 x16' <<<"$output")" -eq 4 ] || { show_run; fail "not 4 L40S"; }
  [ "$(grep -c '^    NVLink: none$' <<<"$output")" -eq 4 ] || { show_run; fail "NVLink reported"; }
  grep -q '^  ens2f0 Ethernet 0000:99:00.0  PCIe gen3 x8 ' <<<"$output" || { show_run; fail "no gen3 x8 NIC"; }
  require_jq
  profile topo --json --topology "$(XML_DIR)/pcie-node.xml"
  assert_ok
  f=$(save_json pcie)
  jq_true "$f" '(.gpus | length) == 4 and .nvswitches == 0 and all(.gpus[]; (.nvlink_peers | length) == 0)'
  jq_true "$f" '.nics == [.nics[0]] and .nics[0].kind == "ethernet" and .nics[0].gpus_same_numa == [0,1,2,3]'
}

@test "topo --topology: a missing file is a one-line error naming it" {
  profile topo --topology /nonexistent/dgx.xml
  assert_profile_error --topology /nonexistent/dgx.xml 'no such file'
}

@test "topo --topology: a file that is not XML is a one-line error naming it" {
  profile topo --topology "$MORPH_SRCDIR/README.md"
  assert_profile_error --topology README.md 'not an hwloc XML topology'
  printf '<topology version="2.0"><object type="Nonsense"/></topology>\n' >"$BATS_TEST_TMPDIR/bad.xml"
  profile topo --json --topology "$BATS_TEST_TMPDIR/bad.xml"
  assert_profile_error bad.xml 'not an hwloc XML topology'
}

@test "an unknown subcommand or option is refused in one line" {
  profile frobnicate
  assert_profile_error "unknown subcommand 'frobnicate'" 'topo, bandwidth or job'
  [ "$status" -eq 2 ]
  profile topo --bogus
  assert_profile_error --bogus
}

@test "bandwidth: bad --sizes and a missing --config fail before MPI starts" {
  profile bandwidth --sizes 64M:1K
  assert_profile_error --sizes 64M:1K 'MIN is larger than MAX'
  profile --config /nonexistent/morph.conf bandwidth
  assert_profile_error /nonexistent/morph.conf
}

# The reference trainer's MLP as an inline model spec (tests/cluster/profile_job.bats).
TINY=layers=4,hidden=16,heads=4,seq=8,vocab=52,name=morph-trainer-mlp

@test "morph-profile job --help lists its options" {
  profile job --help
  assert_ok
  for word in --model --batch --iterations --warmup --out --save --dry-run --held-out --gpus-per-node; do
    [[ "$output" == *"$word"* ]] || { show_run; fail "job --help does not mention '$word'"; }
  done
}

@test "morph-profile job --dry-run prints seven srun commands, three with ZeRO-Offload" {
  profile job --dry-run --model "$TINY" --batch 32 --nodes 1 --gpus-per-node 8 --node-type dgx-a100 \
    --held-out 2 -- trainer --steps 9
  assert_ok
  [ "$(grep -c '^srun --mpi=pmix' <<<"$output")" -eq 7 ] || { show_run; fail "not 7 runs"; }
  [ "$(grep '^srun' <<<"$output" | grep -c 'offload=1')" -eq 3 ] || { show_run; fail "not 3 offloading runs"; }
  [ "$(grep -c '^held out: srun' <<<"$output")" -eq 2 ] || { show_run; fail "not 2 held-out runs"; }
  [[ "$output" == *"--framework torch --mpi-trainer --metrics "*" -- trainer --steps 9"* ]] || { show_run; fail; }
}

@test "morph-profile job: no command, an unknown model, a too small allocation are one-line errors" {
  profile job --dry-run --model "$TINY" --batch 32 --nodes 1 --gpus-per-node 8 --node-type dgx-a100
  assert_profile_error "no trainer command"
  profile job --dry-run --model no-such-model --batch 32 --nodes 1 --gpus-per-node 8 --node-type dgx-a100 -- x
  assert_profile_error --model no-such-model
  profile job --dry-run --model "$TINY" --batch 32 --nodes 1 --gpus-per-node 2 --node-type dgx-a100 -- x
  assert_profile_error "1 node(s) x 2 GPUs holds" "at least 7 are needed, 3 of them with ZeRO-Offload"
  profile job --dry-run --model "$TINY" --batch 32 --node-type no-such-type -- x
  assert_profile_error --node-type no-such-type
  # More GPUs on a node than its type has: refused before the runs, not at the final fit.
  profile job --dry-run --model "$TINY" --batch 32 --nodes 1 --gpus-per-node 16 --node-type dgx-a100 -- x
  assert_profile_error "16 GPUs per node (--gpus-per-node) but NodeType dgx-a100 has 8"
  export SLURM_GPUS_ON_NODE=16
  profile job --dry-run --model "$TINY" --batch 32 --nodes 1 --node-type dgx-a100 -- x
  unset SLURM_GPUS_ON_NODE
  assert_profile_error "16 GPUs per node (SLURM_GPUS_ON_NODE) but NodeType dgx-a100 has 8"
}
