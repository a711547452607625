#!/usr/bin/env python3
"""Writes the saved hwloc 2.x topologies of tests/profiler (dgx-a100.xml, pcie-node.xml).

They follow the structure `lstopo --of xml` exports: CPU objects with their cpusets, I/O
objects (bridges, PCI devices, OS devices) attached to the package they are local to, and
distances matrices. Run from this folder: ./make_topologies.py
"""

import itertools

OSDEV_GPU, OSDEV_NETWORK, OSDEV_OPENFABRICS, OSDEV_COPROC = 1, 2, 3, 5
GT_PER_GEN = {3: 8.0, 4: 16.0}  # GT/s per lane, 128b/130b encoding


def link_GBps(gen, width):
    return GT_PER_GEN[gen] * width * 128 / 130 / 8


def bitmap(indexes):
    """hwloc's bitmap text: 32-bit words, most significant first, 0x-prefixed."""
    if not indexes:
        return "0x0"
    words = [0] * (max(indexes) // 32 + 1)
    for i in indexes:
        words[i // 32] |= 1 << (i % 32)
    return ",".join("0x%08x" % w for w in reversed(words))


class Writer:
    def __init__(self):
        self.lines = []
        self.gp = 0
        self.depth = 1

    def next_gp(self):
        self.gp += 1
        return self.gp

    def open(self, attrs, close=False):
        text = " ".join('%s="%s"' % kv for kv in attrs)
        self.lines.append("  " * self.depth + "<object %s%s>" % (text, "/" if close else ""))
        if not close:
            self.depth += 1

    def close(self):
        self.depth -= 1
        self.lines.append("  " * self.depth + "</object>")

    def info(self, name, value):
        self.lines.append("  " * self.depth + '<info name="%s" value="%s"/>' % (name, value))

    def raw(self, text):
        self.lines.append("  " * self.depth + text)


def cpu_attrs(cpus, nodes):
    return [("cpuset", bitmap(cpus)), ("complete_cpuset", bitmap(cpus)),
            ("nodeset", bitmap(nodes)), ("complete_nodeset", bitmap(nodes))]


def package(w, index, cores, smt_offset, model, numa_memory_bytes):
    pus = [c for c in cores] + [c + smt_offset for c in cores] if smt_offset else list(cores)
    w.open([("type", "Package"), ("os_index", index)] + cpu_attrs(pus, [index]) + [("gp_index", w.next_gp())])
    w.info("CPUVendor", model[0])
    w.info("CPUModel", model[1])
    w.open([("type", "NUMANode"), ("os_index", index)] + cpu_attrs(pus, [index]) +
           [("gp_index", w.next_gp()), ("local_memory", numa_memory_bytes)])
    w.raw('<page_type size="4096" count="%d"/>' % (numa_memory_bytes // 4096))
    w.close()
    for core in cores:
        threads = [core, core + smt_offset] if smt_offset else [core]
        w.open([("type", "Core"), ("os_index", core)] + cpu_attrs(threads, [index]) + [("gp_index", w.next_gp())])
        for pu in threads:
            w.open([("type", "PU"), ("os_index", pu)] + cpu_attrs([pu], [index]) + [("gp_index", w.next_gp())], close=True)
        w.close()


def pci_type(cls, vendor, device, sub_vendor, sub_device, rev):
    return "%04x [%04x:%04x] [%04x:%04x] %02x" % (cls, vendor, device, sub_vendor, sub_device, rev)


def host_bridge(w, bus_lo, bus_hi):
    w.open([("type", "Bridge"), ("gp_index", w.next_gp()), ("bridge_type", "0-1"), ("depth", 0),
            ("bridge_pci", "0000:[%02x-%02x]" % (bus_lo, bus_hi))])


def pci_bridge(w, busid, bus_lo, bus_hi, depth, gen, width):
    w.open([("type", "Bridge"), ("gp_index", w.next_gp()), ("bridge_type", "1-1"), ("depth", depth),
            ("bridge_pci", "0000:[%02x-%02x]" % (bus_lo, bus_hi)), ("pci_busid", busid),
            ("pci_type", pci_type(0x0604, 0x1000, 0xc010, 0x1000, 0xa096, 0xb0)),
            ("pci_link_speed", "%f" % link_GBps(gen, width))])
    w.info("PCIVendor", "Broadcom / LSI")
    w.info("PCIDevice", "PEX890xx PCIe Gen 4 Switch")


def pci_dev(w, busid, ptype, gen, width, vendor, device, subtype=None):
    gp = w.next_gp()
    attrs = [("type", "PCIDev"), ("gp_index", gp), ("pci_busid", busid), ("pci_type", ptype),
             ("pci_link_speed", "%f" % link_GBps(gen, width))]
    if subtype:
        attrs.insert(1, ("subtype", subtype))
    w.open(attrs)
    w.info("PCIVendor", vendor)
    w.info("PCIDevice", device)
    return gp


def os_dev(w, name, osdev_type, subtype, infos):
    gp = w.next_gp()
    attrs = [("type", "OSDev"), ("gp_index", gp), ("name", name)]
    if subtype:
        attrs.append(("subtype", subtype))
    attrs.append(("osdev_type", osdev_type))
    w.open(attrs)
    for k, v in infos:
        w.info(k, v)
    w.close()
    return gp


def nvidia_gpu(w, index, busid, device_id, model, memory_kib, gen, width, sm_count):
    """A GPU PCI device with its CUDA and NVML OS devices; returns the NVML object's gp_index."""
    pci_dev(w, busid, pci_type(0x0302, 0x10de, device_id, 0x10de, 0x1463, 0xa1), gen, width,
            "NVIDIA Corporation", model)
    os_dev(w, "cuda%d" % index, OSDEV_COPROC, "CUDA",
           [("Backend", "CUDA"), ("GPUVendor", "NVIDIA Corporation"), ("GPUModel", "NVIDIA " + model),
            ("CUDAGlobalMemorySize", memory_kib), ("CUDAL2CacheSize", 40960),
            ("CUDAMultiProcessors", sm_count), ("CUDACoresPerMP", 64), ("CUDASharedMemorySizePerMP", 48)])
    gp = os_dev(w, "nvml%d" % index, OSDEV_GPU, "NVML",
                [("Backend", "NVML"), ("GPUVendor", "NVIDIA Corporation"), ("GPUModel", "NVIDIA " + model),
                 ("NVIDIASerial", "1560620%06d" % (index * 4111)),
                 ("NVIDIAUUID", "GPU-%08x-%04x-%04x-%04x-%012x" % (0x5a1f0000 + index, index, 0x4c2e, 0x9d17, 0x3e5b21c0 + index))])
    w.close()
    return gp


def distances(w, name, kind, objects, values, hetero):
    n = len(objects)
    indexes = "".join("%s " % o for o in objects)
    u64 = "".join("%d " % v for v in values)
    tag = "distances2hetero" if hetero else "distances2"
    head = '<%s nbobjs="%d" kind="%d" name="%s" indexing="%s"' % (tag, n, kind, name, "gp" if hetero else "os")
    if not hetero:
        head += ' type="NUMANode"'
    w.raw(head + ">")
    w.raw('  <indexes length="%d">%s</indexes>' % (len(indexes), indexes))
    w.raw('  <u64values length="%d">%s</u64values>' % (len(u64), u64))
    w.raw("</%s>" % tag)


def document(w, machine_cpus, machine_nodes, infos, body, tail):
    out = ['<?xml version="1.0" encoding="UTF-8"?>', '<!DOCTYPE topology SYSTEM "hwloc2.dtd">', '<topology version="2.0">']
    attrs = [("type", "Machine"), ("os_index", 0)] + cpu_attrs(machine_cpus, machine_nodes)
    attrs += [("allowed_cpuset", bitmap(machine_cpus)), ("allowed_nodeset", bitmap(machine_nodes)), ("gp_index", 1)]
    w.gp = 1
    w.lines = []
    w.depth = 2
    for k, v in infos:
        w.info(k, v)
    body(w)
    inner = w.lines
    w.lines = []
    w.depth = 1
    tail(w)
    out.append("  <object %s>" % " ".join('%s="%s"' % kv for kv in attrs))
    out += inner
    out.append("  </object>")
    out += w.lines
    out.append("</topology>")
    return "\n".join(out) + "\n"


KIND_FROM_OS, KIND_LATENCY, KIND_BANDWIDTH, KIND_HETERO = 1, 4, 8, 16


def dgx_a100():
    """DGX A100: 2 AMD EPYC 7742 (64 cores, SMT 2), 2 NUMA nodes, 8 A100-SXM4-80GB on 4
    PCIe gen4 switches (2 GPUs + 1 ConnectX-6 HCA each), 6 NVSwitches."""
    w = Writer()
    nvml = {}
    switches = []

    def body(w):
        for p in range(2):
            package(w, p, range(64 * p, 64 * p + 64), 128, ("AuthenticAMD", "AMD EPYC 7742 64-Core Processor"),
                    1024 * 2**30)
            for s in range(2):
                sw = 2 * p + s
                bus = 0x10 + 0x40 * sw
                host_bridge(w, bus, bus + 0x1f)
                pci_bridge(w, "0000:%02x:01.1" % bus, bus + 1, bus + 0x1f, 1, 4, 16)  # root port
                pci_bridge(w, "0000:%02x:00.0" % (bus + 1), bus + 2, bus + 0x1f, 2, 4, 16)  # switch upstream
                for g in range(2):
                    gpu = 2 * sw + g
                    port = bus + 2 + g * 4
                    pci_bridge(w, "0000:%02x:%02x.0" % (bus + 2, g * 4), port + 1, port + 1, 3, 4, 16)
                    nvml[gpu] = nvidia_gpu(w, gpu, "0000:%02x:00.0" % (port + 1), 0x20b2, "A100-SXM4-80GB",
                                           81920 * 1024, 4, 16, 108)
                    w.close()
                port = bus + 2 + 8
                pci_bridge(w, "0000:%02x:08.0" % (bus + 2), port + 1, port + 1, 3, 4, 16)
                pci_dev(w, "0000:%02x:00.0" % (port + 1), pci_type(0x0207, 0x15b3, 0x101b, 0x15b3, 0x0007, 0x00), 4, 16,
                        "Mellanox Technologies", "MT28908 Family [ConnectX-6]")
                os_dev(w, "ibp%ds0" % (port + 1), OSDEV_NETWORK, None,
                       [("Address", "00:00:10:29:fe:80:00:00:00:00:00:00:b8:ce:f6:03:00:%02x:%02x:%02x" % (sw, sw, sw)),
                        ("Port", 1)])
                os_dev(w, "mlx5_%d" % sw, OSDEV_OPENFABRICS, "OpenFabrics",
                       [("NodeGUID", "b8ce:f603:00%02x:%02x00" % (sw, sw)), ("SysImageGUID", "b8ce:f603:00%02x:%02x00" % (sw, sw)),
                        ("Port1State", 4), ("Port1LID", "0x%x" % (sw + 1)), ("Port1LMC", 0),
                        ("Port1GID0", "fe80:0000:0000:0000:b8ce:f603:00%02x:%02x00" % (sw, sw))])
                w.close()  # HCA
                w.close()  # HCA port
                w.close()  # switch
                w.close()  # root port
                w.close()  # host bridge
            if p == 1:
                # The 6 NVSwitches hang off a host bridge of the second package (NVML names them
                # as the NVLink peers of every GPU; hwloc marks them subtype NVSwitch).
                host_bridge(w, 0xc0, 0xcf)
                for n in range(6):
                    switches.append(pci_dev(w, "0000:c%x:00.0" % (n + 1),
                                            pci_type(0x0680, 0x10de, 0x1af1, 0x10de, 0x1626, 0xa1), 3, 1,
                                            "NVIDIA Corporation", "GA100 [A100 NVSwitch]", subtype="NVSwitch"))
                    w.close()
                w.close()
            w.close()  # package

    def tail(w):
        # NVML: 12 NVLink 3 links of 25 GB/s per GPU, two to each NVSwitch (MB/s, as hwloc reports).
        objects = ["OSDev:%d" % nvml[g] for g in range(8)] + ["PCIDev:%d" % s for s in switches]
        n = len(objects)
        values = [0] * (n * n)
        for g in range(8):
            values[g * n + g] = 300000
            for s in range(6):
                values[g * n + 8 + s] = 50000
                values[(8 + s) * n + g] = 50000
        distances(w, "NVLinkBandwidth", KIND_FROM_OS | KIND_BANDWIDTH | KIND_HETERO, objects, values, True)
        distances(w, "NUMALatency", KIND_FROM_OS | KIND_LATENCY, [0, 1], [10, 32, 32, 10], False)

    return document(w, list(range(256)), [0, 1],
                    [("Backend", "Linux"), ("OSName", "Linux"), ("HostName", "dgx-a100-01"),
                     ("Architecture", "x86_64"), ("hwlocVersion", "2.9.0"), ("DMIProductName", "DGXA100 920-23687-2530-000")],
                    body, tail)


def pcie_node():
    """One Xeon Gold 6338 socket (32 cores, SMT 2), 1 NUMA node, 4 L40S on their own gen4 x16
    root ports, one Intel X710 10GbE NIC (gen3 x8), no NVLink."""
    w = Writer()

    def body(w):
        package(w, 0, range(32), 32, ("GenuineIntel", "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz"), 512 * 2**30)
        for g in range(4):
            bus = 0x17 + 0x20 * g
            host_bridge(w, bus, bus + 1)
            pci_bridge(w, "0000:%02x:02.0" % bus, bus + 1, bus + 1, 1, 4, 16)
            nvidia_gpu(w, g, "0000:%02x:00.0" % (bus + 1), 0x26b9, "L40S", 46068 * 1024, 4, 16, 142)
            w.close()
            w.close()
        host_bridge(w, 0x98, 0x99)
        pci_bridge(w, "0000:98:02.0", 0x99, 0x99, 1, 3, 8)
        pci_dev(w, "0000:99:00.0", pci_type(0x0200, 0x8086, 0x1572, 0x8086, 0x0001, 0x02), 3, 8,
                "Intel Corporation", "Ethernet Controller X710 for 10GbE SFP+")
        os_dev(w, "ens2f0", OSDEV_NETWORK, None, [("Address", "3c:fd:fe:b4:2a:10")])
        w.close()
        w.close()
        w.close()
        w.close()  # package

    return document(w, list(range(64)), [0],
                    [("Backend", "Linux"), ("OSName", "Linux"), ("HostName", "pcie-node-01"),
                     ("Architecture", "x86_64"), ("hwlocVersion", "2.9.0")],
                    body, lambda w: None)


if __name__ == "__main__":
    with open("dgx-a100.xml", "w") as f:
        f.write(dgx_a100())
    with open("pcie-node.xml", "w") as f:
        f.write(pcie_node())
