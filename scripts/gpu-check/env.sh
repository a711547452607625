# shellcheck shell=bash
# Sourced by run.sh: the environment of the carried morph-profile. Its libraries first, then
# the machine's libcudart and libnccl (PyTorch's NCCL when there is no other); Open MPI as
# a singleton that starts no orted (there is no mpirun there), hwloc with its PCI plugin.
gpu=${MORPH_GPU_PACK:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.gpu}
nccl=$(python3 -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$gpu/lib:${nccl:+$nccl:}/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_MCA_mca_base_component_path=$gpu/ompi-components
export OMPI_MCA_ess_singleton_isolated=1
export OMPI_MCA_mca_base_component_show_load_errors=0
export OMPI_MCA_btl=self,vader
export HWLOC_PLUGINS_PATH=$gpu/hwloc
