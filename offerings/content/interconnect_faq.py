"""The FAQ of `/nvlink-infiniband/`, in English and Simplified Chinese.

The four questions a buyer of that page asks first (the site FAQ's own entries, `faq.
SEED_PAGE_SLUGS`, marked up as FAQPage JSON-LD here and not on `/faq/`), then the page's own
questions, those of a buyer looking at its table. Same markup and rendering as `faq.py`; both
languages list the same slugs in the same order.
"""

from __future__ import annotations

from offerings.content.faq import NCCL_TESTS, Entry, seed_page_entries

ENGLISH = (
    Entry(
        "what-counts",
        "Which networks does this page count as InfiniBand?",
        (
            "Every fabric that gives NCCL RDMA between nodes: InfiniBand itself, RoCE v2, "
            "AWS's EFA and Alibaba's eRDMA ([all RDMA fabrics](table:rdma)). Google's "
            "GPUDirect-TCPX and plain Ethernet are not counted, because they carry the traffic "
            "over TCP; the fabric column names the technology of each row, so you can tell "
            "InfiniBand from its rivals at a glance.",
        ),
    ),
    Entry(
        "which-has-both",
        "Which instances have both NVLink and an RDMA fabric?",
        (
            "Choose \u201cboth\u201d above, or open [every instance with both](table:"
            "interconnect-both). Most are 8-GPU boards whose GPUs share an NVSwitch (or AMD's "
            "Infinity Fabric), with one network port per GPU; the rest are the 4-GPU nodes of "
            "rack-scale GB200 and GB300 systems and a few smaller slices. These are the machines "
            "for training that spans several nodes.",
        ),
    ),
    Entry(
        "nvlink-without-rdma",
        "Is an NVLink instance without InfiniBand enough?",
        (
            "For a job that fits in one node, yes: the GPUs talk over NVLink and the network "
            "between nodes is never used, so an [NVLink node without RDMA](table:nvlink-no-rdma) "
            "is often the better buy.",
            "It is a trap when you book several of them for one job. Many providers let you "
            "start several such nodes, but they exchange gradients over TCP, and an exchange "
            "that takes tens of milliseconds over NVLink can take seconds between them. The "
            "filter page's preset \u201cNVLink but no RDMA between nodes\u201d lists the ones "
            "you can book several of.",
        ),
    ),
    Entry(
        "rdma-without-nvlink",
        "What is an instance with RDMA but no NVLink good for?",
        (
            "These are PCIe cards (L4, L40S, A10G and the like) behind a fast network card: "
            "[RDMA without NVLink](table:rdma-no-nvlink). They suit data-parallel training of "
            "models that fit on one GPU and inference replicas that read a shared store. Tensor "
            "parallelism across their GPUs is slow, because every layer's traffic crosses PCIe.",
        ),
    ),
    Entry(
        "unknown-side",
        "Why do some rows say \u201cunknown\u201d for one of the two?",
        (
            "A row is listed as soon as one interconnect is known from a source; the other may "
            "be something no source states. The catalog shows it as unknown and never guesses "
            "it, and an unknown fact satisfies no filter value that needs it. [NVLink instances "
            "whose fabric is unknown](table:nvlink-fabric-unknown) are the usual case: their "
            "multi-node performance is unknown until the provider says which network they have.",
            "If you know the answer and can point to a source, the form at the end of each "
            "instance's page sends it to the curators.",
        ),
    ),
    Entry(
        "check-after-launch",
        "How do I check what I actually got once the instance is running?",
        (
            "Inside the node, `nvidia-smi topo -m` prints the link between every two GPUs: "
            "`NV` followed by a number means NVLink, `PIX`, `PXB`, `PHB` or `SYS` mean PCIe. "
            "Between nodes, `ibv_devinfo` lists the RDMA devices, and a two-node run of "
            "[nccl-tests](" + NCCL_TESTS + ") with `NCCL_DEBUG=INFO` shows whether NCCL uses "
            "them (`NET/IB` or `NET/OFI`, not `NET/Socket`) and the bus bandwidth you get.",
        ),
    ),
)

CHINESE = (
    Entry(
        "what-counts",
        "本页把哪些网络算作 InfiniBand？",
        (
            "凡是能让 NCCL 在节点之间使用 RDMA 的网络都算：InfiniBand 本身、RoCE v2、AWS 的 EFA "
            "和阿里云的 eRDMA（[所有 RDMA 网络](table:rdma)）。Google 的 GPUDirect-TCPX 和普通"
            "以太网不算，因为它们用 TCP 传输数据；网络一列写明了每一行的具体技术，一眼就能分清"
            " InfiniBand 和它的同类。",
        ),
    ),
    Entry(
        "which-has-both",
        "哪些实例同时具备 NVLink 和 RDMA 网络？",
        (
            "在上面选择“两者都有”，或打开[同时具备两者的全部实例](table:interconnect-both)。"
            "其中大多数是 8 卡主板，GPU 共用一个 NVSwitch（AMD 则是 Infinity Fabric），每块 GPU "
            "配一个网络端口；其余是整机柜 GB200 和 GB300 系统的 4 卡节点，以及少数更小的切分规格。"
            "跨多个节点的训练，用的就是这类机器。",
        ),
    ),
    Entry(
        "nvlink-without-rdma",
        "只有 NVLink、没有 InfiniBand 的实例够用吗？",
        (
            "如果作业放得进一个节点，够用：GPU 之间走 NVLink，节点之间的网络根本用不上，所以"
            "[没有 RDMA 的 NVLink 节点](table:nvlink-no-rdma)往往更划算。",
            "如果为同一个作业租好几台，这就是个陷阱。很多云厂商允许你启动多台这样的节点，但它们"
            "之间通过 TCP 交换梯度，走 NVLink 只需几十毫秒的一次交换，跨节点可能要好几秒。筛选页上的"
            "预设“有 NVLink，但节点间没有 RDMA”列出的正是其中可以租多台的实例。",
        ),
    ),
    Entry(
        "rdma-without-nvlink",
        "有 RDMA 但没有 NVLink 的实例适合做什么？",
        (
            "这些是配了高速网卡的 PCIe 卡（L4、L40S、A10G 等）：[有 RDMA、无 NVLink 的实例]"
            "(table:rdma-no-nvlink)。它们适合单卡放得下的模型做数据并行训练，以及读取共享存储"
            "的推理副本。在它们的 GPU 之间做张量并行会很慢，因为每一层的通信都要经过 PCIe。",
        ),
    ),
    Entry(
        "unknown-side",
        "为什么有些行的两种互联中有一种显示“未知”？",
        (
            "只要有来源说明其中一种互联，这一行就会列出；另一种可能没有任何来源说明。目录把它"
            "记为未知，从不猜测，而未知的事实不满足任何需要它的筛选值。最常见的是[网络未知的"
            " NVLink 实例](table:nvlink-fabric-unknown)：在云厂商说明它们用哪种网络之前，它们的"
            "多节点性能都是未知的。",
            "如果你知道答案并能给出来源，可以用每个实例页面末尾的表单告诉目录维护者。",
        ),
    ),
    Entry(
        "check-after-launch",
        "实例运行起来以后，怎样确认实际拿到的是什么？",
        (
            "节点内部，`nvidia-smi topo -m` 会列出任意两块 GPU 之间的连接：`NV` 加数字表示 "
            "NVLink，`PIX`、`PXB`、`PHB` 或 `SYS` 表示 PCIe。节点之间，`ibv_devinfo` 会列出 "
            "RDMA 设备；再用 [nccl-tests](" + NCCL_TESTS + ") 加上 `NCCL_DEBUG=INFO` 跨两个节点"
            "跑一次，就能看出 NCCL 是否用上了它们（出现 `NET/IB` 或 `NET/OFI`，而不是 "
            "`NET/Socket`），以及实际得到的总线带宽。",
        ),
    ),
)

# The buyer's first four questions (the site FAQ's entries, the same text), then the page's own.
OWN = {"en": ENGLISH, "zh-hans": CHINESE}
FAQ = {language: seed_page_entries(language) + own for language, own in OWN.items()}
