"""The FAQ in English and Simplified Chinese: one structure renders the page and its JSON-LD.

Answers are paragraphs in the small markup of `offerings.content.markup.render_markup`: source
links `[text](https://...)`, table links `[text](table:slug)` (see `TABLE_LINKS`), figures
`{name}` (see `offerings.content.facts.stated_figures`) and `` `code` ``. Both languages list the
same questions in the same order, under the same slugs (the anchors on the page).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.safestring import SafeString

from offerings.content.markup import Absolute, Counts, render_markup

NCCL_ENV = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
NCCL_TROUBLESHOOTING = (
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"
)
AWS_EFA = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html"
AWS_EFA_CARDS = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html"
AWS_OFI_NCCL = "https://github.com/aws/aws-ofi-nccl"
GCP_NETWORK = "https://cloud.google.com/compute/docs/gpus/gpu-network-bandwidth"
GCP_TCPX = "https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx"
GPUDIRECT_RDMA = "https://docs.nvidia.com/cuda/gpudirect-rdma/"
NCCL_TESTS = "https://github.com/NVIDIA/nccl-tests"


@dataclass(frozen=True)
class Entry:
    slug: str
    question: str
    answer: tuple[str, ...]


ENGLISH = (
    Entry(
        "do-i-need-both",
        "Do I need both NVLink and InfiniBand?",
        (
            "Only if your job spans more than one server. NVLink joins the GPUs inside one "
            "server; InfiniBand, or an RDMA network like it, joins servers to each other. They "
            "carry different traffic and neither can stand in for the other.",
            "If the model, its gradients and its optimizer state fit in the GPUs of one server "
            "and one server finishes the work in acceptable time, NVLink is what you need and "
            "the network between servers hardly matters: look at [NVLink instances on plain "
            "Ethernet](table:nvlink-ethernet), which are often cheaper and easier to get. Once a "
            "job runs on several servers, you need both: NVLink for the traffic inside each node "
            "and a fast fabric for the traffic between them, as on [NVLink nodes with "
            "InfiniBand](table:nvlink-infiniband).",
        ),
    ),
    Entry(
        "single-gpu-job",
        "Will my single-GPU job run faster on an instance with NVLink or InfiniBand?",
        (
            "No. A job that uses one GPU never sends data to another GPU, so it never touches "
            "either interconnect. Its speed depends on that GPU (compute, memory size, memory "
            "bandwidth) and on the host around it (CPU, storage, data loading).",
            "Running it on an 8-GPU NVSwitch node means paying for seven idle GPUs and links you "
            "do not use. The same holds for several independent single-GPU jobs sharing a node. "
            "If the model no longer fits on one GPU, the job stops being a single-GPU job, and "
            "the next question applies.",
        ),
    ),
    Entry(
        "why-interconnect-matters",
        "Why does the interconnect matter more than single-GPU specs for large training?",
        (
            "Because in large training the GPUs spend part of every step waiting for each other. "
            "With data parallelism each GPU combines its gradients with all the others after "
            "every step (an all-reduce); with tensor parallelism the GPUs exchange activations "
            "inside every layer; fully sharded training also gathers the weights before each "
            "layer. While that traffic is in flight, the compute units sit idle.",
            "A faster GPU shortens the compute part of the step and leaves the communication "
            "part as it was, so the share of time spent waiting grows. An H100 has {nvlink4} of "
            "NVLink against {pcie5} for its PCIe 5.0 x16 slot, about seven times more; between "
            "servers a typical H100 node has one {ndr} port per GPU. When the link is the "
            "bottleneck, more or faster GPUs add cost, not speed.",
        ),
    ),
    Entry(
        "every-multi-gpu-nvlink",
        "Does every multi-GPU instance have NVLink?",
        (
            "No. Many multi-GPU instances connect their GPUs only through PCIe, sometimes "
            "through the CPU: most with L4, L40S, A10G or RTX-class cards, and those with the "
            "PCIe versions of A100 and H100. The catalog lists these [multi-GPU instances with "
            "PCIe only](table:pcie-only) apart from [instances with NVLink](table:nvlink).",
            "Some PCIe cards (A100 PCIe, H100 NVL, RTX A6000) can be joined in pairs by an "
            "NVLink bridge. That speeds up traffic between the two GPUs of a pair, not between "
            "pairs. The instance name seldom says which you get; the provider's specification "
            "does, and on a running machine `nvidia-smi topo -m` shows the link between every "
            "two GPUs.",
        ),
    ),
    Entry(
        "efa-roce-infiniband",
        "Is EFA or RoCE the same as InfiniBand?",
        (
            "No, but all three give a training job what it needs from the network: RDMA, and on "
            "the right instances GPUDirect RDMA. RoCE v2 carries InfiniBand's RDMA transport "
            "over routed Ethernet and needs a well-tuned Ethernet network to stay fast under "
            "load. AWS's [Elastic Fabric Adapter](" + AWS_EFA + ") runs AWS's own SRD protocol "
            "over Ethernet and offers RDMA-style transfers through libfabric; NCCL reaches it "
            "through the [aws-ofi-nccl](" + AWS_OFI_NCCL + ") plugin. Alibaba's eRDMA is "
            "likewise RDMA over its own Ethernet network.",
            "What differs is latency under load, how congestion is handled, and extras such as "
            "in-network reductions on InfiniBand switches where the provider enables them. For "
            "most jobs the question that decides is simpler: does NCCL use RDMA at the "
            "advertised bandwidth? Compare [InfiniBand](table:infiniband), [RoCE](table:roce), "
            "[EFA](table:efa) and [eRDMA](table:erdma) instances in the table.",
        ),
    ),
    Entry(
        "how-many-nodes",
        "How many nodes can I get on one fabric?",
        (
            "It depends on the provider and on how you buy. Where the provider lets you start "
            "several interconnected nodes yourself, the catalog marks the instance [self-serve "
            "multi-node](table:multi-node) and records the largest cluster the provider states. "
            "Where large clusters are sold only through a sales team or as reserved blocks, it "
            "says so, and leaves the size unknown when no source states it.",
            "A statement like \u201cthousands of GPUs\u201d describes the provider's fabric, not "
            "what you can start on demand today. Before you commit, ask in writing how many "
            "nodes you get on the same fabric, whether it is non-blocking between them, and "
            "whether every GPU has its own network port (a rail-optimised design).",
        ),
    ),
    Entry(
        "slow-multi-node",
        "Why is my multi-node job slow although the instance has InfiniBand?",
        (
            "Most often NCCL is not using the fabric at all. When it cannot open an RDMA device "
            "it falls back to TCP sockets on the ordinary network, without an error. Run once "
            "with `NCCL_DEBUG=INFO`: lines naming `NET/IB` (InfiniBand or RoCE) or `NET/OFI` "
            "(EFA through libfabric) mean the fabric is used, `NET/Socket` means TCP, and "
            "`GDRDMA` on a channel means GPUDirect RDMA is on.",
            "The usual causes: the RDMA drivers are missing from the image, or a container was "
            "started without the InfiniBand devices; the network plugin is missing (EFA needs "
            "libfabric and [aws-ofi-nccl](" + AWS_OFI_NCCL + "), Google's TCPX needs [its own "
            "NCCL plugin and daemon](" + GCP_TCPX + ")); `NCCL_SOCKET_IFNAME` points at a "
            "Docker bridge or the wrong interface; `NCCL_IB_HCA` leaves out some of the node's "
            "GPU-facing adapters or includes the front-end one; only part of the node's network "
            "cards are configured ([AWS P5 reaches its full bandwidth only with all of "
            "them](" + AWS_EFA_CARDS + ")); the nodes are not in the same placement group or "
            "cluster network.",
            "Then measure: [nccl-tests](" + NCCL_TESTS + ") `all_reduce_perf` across two nodes "
            "shows the bus bandwidth you actually get, to compare with the fabric's line rate. "
            "NVIDIA's [environment variable reference](" + NCCL_ENV + ") and "
            "[troubleshooting guide](" + NCCL_TROUBLESHOOTING + ") explain each setting.",
        ),
    ),
    Entry(
        "nvswitch-or-bridge",
        "What is the difference between NVLink, NVSwitch and an NVLink bridge?",
        (
            "NVLink is the link itself. NVSwitch is a switch chip that connects the NVLinks of "
            "every GPU on a board, so that any GPU reaches any other at full speed at the same "
            "time; 8-GPU HGX boards are built this way, see [nodes with all GPUs on one "
            "NVSwitch](table:nvswitch-8). A bridge physically joins two cards: fast inside the "
            "pair, PCIe between pairs. Older V100 servers used a hybrid cube-mesh, with direct "
            "links between some GPUs and not others.",
            "For tensor parallelism across all GPUs of a node, a switched domain is what you "
            "want; with bridges, keep the communication-heavy part of the job inside a pair.",
        ),
    ),
    Entry(
        "tcpx-rdma",
        "Is Google's GPUDirect-TCPX RDMA?",
        (
            "No. On A3 High and A3 Mega machines, [GPUDirect-TCPX and TCPXO](" + GCP_NETWORK + ") "
            "move data between GPU memory and the network card directly, but over TCP, with "
            "Google's NCCL plugin and a per-node daemon doing the work. That is far faster than "
            "plain TCP through host memory, and it needs its own software stack to get there. "
            "Google's A3 Ultra and A4 machines use RoCE, which is RDMA.",
            "The catalog keeps it apart from the RDMA fabrics: [TCPX instances](table:tcpx).",
        ),
    ),
    Entry(
        "units",
        "Why are NVLink figures in GB/s and network figures in Gb/s?",
        (
            "Because that is how the vendors quote them. NVLink is given in gigabytes per "
            "second per GPU with both directions added: NVLink 4 is {nvlink4}, that is "
            "{nvlink4_one_way} each way. Networks are given in gigabits per second per port, one "
            "direction: NDR InfiniBand is {ndr}, which is {ndr_bytes} each way.",
            "An H100 node with one NDR port per GPU has {hgx_ndr_node} in total, or "
            "{hgx_ndr_node_bytes} each way for the whole node. Inside the node each GPU has its "
            "own NVLink bandwidth, an order of magnitude more than its share of the network; "
            "that gap is why work is arranged so that the heaviest traffic stays inside the "
            "NVLink domain.",
        ),
    ),
    Entry(
        "cost-and-availability",
        "Why do NVLink and InfiniBand instances cost more, and why are they hard to get?",
        (
            "The hardware costs more: SXM boards with NVSwitch, a high-speed network card per "
            "GPU and a switch fabric sized so that nodes do not block each other. Providers rent "
            "it in whole nodes, and demand for the newest GPUs exceeds supply, so on-demand "
            "capacity is tight, spot offers are few ([spot prices on NVLink "
            "instances](table:spot-nvlink)), and multi-node clusters are often sold as reserved "
            "blocks or through sales.",
            "Prices on this site are references read from provider APIs and pages on the date "
            "shown, not quotes. Check the provider before you plan around one.",
        ),
    ),
    Entry(
        "nvlink-between-instances",
        "Can NVLink connect GPUs in two separate instances?",
        (
            "Normally no: the NVLink domain ends at the edge of the server, and two ordinary "
            "8-GPU instances exchange data over the network, however fast their NVLink is.",
            "The exception is rack-scale systems such as the GB200 NVL72, where NVLink switch "
            "trays join {nvl72} GPUs, four per compute tray, into one domain. Providers rent "
            "these as nodes of four GPUs that share the rack's NVLink domain: "
            "[GB200 and GB300 instances](table:nvl72).",
        ),
    ),
)

CHINESE = (
    Entry(
        "do-i-need-both",
        "NVLink 和 InfiniBand 两样都要吗？",
        (
            "只有当作业跨越多台服务器时才需要两样都有。NVLink 连接的是同一台服务器里的 GPU；"
            "InfiniBand 或同类的 RDMA 网络连接的是服务器与服务器。两者承载的流量不同，"
            "谁也替代不了谁。",
            "如果模型、梯度和优化器状态放得进一台服务器的 GPU 显存，而且一台服务器就能在可接受的"
            "时间内跑完，那么你需要的是 NVLink，服务器之间的网络几乎无关紧要：可以看看"
            "[只有普通以太网的 NVLink 实例](table:nvlink-ethernet)，它们往往更便宜，也更容易租到。"
            "一旦作业要跑在多台服务器上，两样就都需要了：节点内的流量走 NVLink，节点间的流量走"
            "高速网络，比如[同时具备 NVLink 和 InfiniBand 的节点](table:nvlink-infiniband)。",
        ),
    ),
    Entry(
        "single-gpu-job",
        "单卡作业放到带 NVLink 或 InfiniBand 的实例上会更快吗？",
        (
            "不会。只用一块 GPU 的作业从不向其他 GPU 发送数据，两种互联都用不上。它的速度取决于"
            "这块 GPU 本身（算力、显存容量、显存带宽）以及主机的其余部分（CPU、存储、数据加载）。",
            "把它放到 8 卡 NVSwitch 节点上，等于为七块闲置的 GPU 和用不上的链路付费。几个彼此独立"
            "的单卡作业共用一个节点，也是同样的道理。如果模型一块 GPU 已经放不下，它就不再是单卡"
            "作业了，请看下一个问题。",
        ),
    ),
    Entry(
        "why-interconnect-matters",
        "为什么大模型训练中互联比单卡规格更重要？",
        (
            "因为在大规模训练中，GPU 每一步都有一部分时间在互相等待。数据并行时，每一步结束后每块"
            " GPU 都要和其他所有 GPU 合并梯度（all-reduce）；张量并行时，GPU 在每一层内部交换激活值；"
            "全分片训练还要在每层计算前收集权重。这些数据在传输时，计算单元只能空等。",
            "更快的 GPU 缩短了每一步中计算的部分，通信的部分却不变，于是等待所占的比例反而变大。"
            "一块 H100 的 NVLink 带宽是 {nvlink4}，而它所在的 PCIe 5.0 x16 插槽只有 {pcie5}，"
            "相差约七倍；在服务器之间，典型的 H100 节点为每块 GPU 配一个 {ndr} 端口。当链路成为"
            "瓶颈时，增加 GPU 或换更快的 GPU 只会增加成本，不会提高速度。",
        ),
    ),
    Entry(
        "every-multi-gpu-nvlink",
        "所有多卡实例都有 NVLink 吗？",
        (
            "没有。很多多卡实例的 GPU 之间只通过 PCIe 相连，有时还要经过 CPU：大多数 L4、L40S、"
            "A10G 或 RTX 系列的实例如此，A100 和 H100 的 PCIe 版本也是这样。目录把这些"
            "[只有 PCIe 的多卡实例](table:pcie-only)和[带 NVLink 的实例](table:nvlink)分开列出。",
            "有些 PCIe 卡（A100 PCIe、H100 NVL、RTX A6000）可以用 NVLink 桥两两相连。这只能加快"
            "一对 GPU 之间的通信，对不同的卡对之间没有帮助。实例名称很少说明是哪一种；云厂商的规格"
            "说明会写，在运行中的机器上执行 `nvidia-smi topo -m` 也能看到任意两块 GPU 之间的连接方式。",
        ),
    ),
    Entry(
        "efa-roce-infiniband",
        "EFA 或 RoCE 和 InfiniBand 是一回事吗？",
        (
            "不是，但三者都能给训练作业提供它需要的网络能力：RDMA，以及在合适实例上的 GPUDirect "
            "RDMA。RoCE v2 把 InfiniBand 的 RDMA 传输层搬到可路由的以太网上，需要调校良好的以太网"
            "才能在高负载下保持速度。AWS 的 [Elastic Fabric Adapter](" + AWS_EFA + ") 在以太网上"
            "运行 AWS 自己的 SRD 协议，通过 libfabric 提供类似 RDMA 的传输；NCCL 要借助 "
            "[aws-ofi-nccl](" + AWS_OFI_NCCL + ") 插件才能使用它。阿里云的 eRDMA 同样是建立在其"
            "自有以太网上的 RDMA。",
            "它们的差别在于高负载下的延迟、拥塞的处理方式，以及一些附加功能，例如云厂商启用时 "
            "InfiniBand 交换机上的网内归约。对大多数作业来说，起决定作用的问题更简单：NCCL 是否以"
            "标称带宽用上了 RDMA？可以在表格中比较 [InfiniBand](table:infiniband)、[RoCE](table:roce)、"
            "[EFA](table:efa) 和 [eRDMA](table:erdma) 实例。",
        ),
    ),
    Entry(
        "how-many-nodes",
        "在同一张网络上最多能拿到多少个节点？",
        (
            "这取决于云厂商，也取决于购买方式。如果云厂商允许你自己启动多个互联的节点，目录会把该"
            "实例标为[可自助多节点](table:multi-node)，并记录厂商公开说明的最大集群规模。如果大集群"
            "只能通过销售团队或以预留容量块的形式购买，目录会如实注明；没有来源说明规模时，就记为"
            "未知。",
            "“数千块 GPU”之类的说法描述的是厂商的整张网络，而不是你今天能按需启动的规模。签约之前，"
            "请书面确认：同一张网络上能拿到多少个节点，节点之间是否无阻塞，以及是否每块 GPU 都有"
            "自己的网络端口（即 rail 优化设计）。",
        ),
    ),
    Entry(
        "slow-multi-node",
        "实例明明有 InfiniBand，为什么多节点作业还是很慢？",
        (
            "最常见的原因是 NCCL 根本没有用上这张网络。打不开 RDMA 设备时，它会不报错地退回到普通"
            "网络上的 TCP 套接字。用 `NCCL_DEBUG=INFO` 跑一次：日志里出现 `NET/IB`（InfiniBand 或 "
            "RoCE）或 `NET/OFI`（通过 libfabric 使用 EFA）说明用上了高速网络，出现 `NET/Socket` "
            "说明走的是 TCP，通道信息里有 `GDRDMA` 则说明 GPUDirect RDMA 已启用。",
            "常见原因有：镜像里缺少 RDMA 驱动，或者容器启动时没有挂载 InfiniBand 设备；缺少网络插件"
            "（EFA 需要 libfabric 和 [aws-ofi-nccl](" + AWS_OFI_NCCL + ")，Google 的 TCPX 需要"
            "[专用的 NCCL 插件和守护进程](" + GCP_TCPX + ")）；`NCCL_SOCKET_IFNAME` 指向了 Docker "
            "网桥或错误的网卡；`NCCL_IB_HCA` 漏掉了节点上部分面向 GPU 的网卡，或者把前端网卡也"
            "包括了进去；节点上只配置了部分网卡（[AWS P5 只有全部配置才能达到满带宽]"
            "(" + AWS_EFA_CARDS + ")）；各节点不在同一个置放群组或集群网络中。",
            "然后实测：用 [nccl-tests](" + NCCL_TESTS + ") 的 `all_reduce_perf` 跨两个节点运行，"
            "看看实际得到的总线带宽，再与网络的线速比较。NVIDIA 的"
            "[环境变量说明](" + NCCL_ENV + ")和[故障排查指南](" + NCCL_TROUBLESHOOTING + ")"
            "解释了每个设置。",
        ),
    ),
    Entry(
        "nvswitch-or-bridge",
        "NVLink、NVSwitch 和 NVLink 桥有什么区别？",
        (
            "NVLink 是链路本身。NVSwitch 是一颗交换芯片，它把一块主板上所有 GPU 的 NVLink 连在"
            "一起，让任意两块 GPU 能同时以全速互相通信；8 卡 HGX 主板就是这样设计的，参见"
            "[所有 GPU 都在同一个 NVSwitch 上的节点](table:nvswitch-8)。桥则是把两张卡物理地连在"
            "一起：一对卡之间很快，卡对之间仍走 PCIe。较早的 V100 服务器采用混合立方网格，"
            "部分 GPU 之间有直连，其余没有。",
            "如果要在一个节点的所有 GPU 上做张量并行，需要的是交换式互联域；如果是桥接，应让作业中"
            "通信最密集的部分留在一对卡之内。",
        ),
    ),
    Entry(
        "tcpx-rdma",
        "Google 的 GPUDirect-TCPX 算 RDMA 吗？",
        (
            "不算。在 A3 High 和 A3 Mega 机型上，[GPUDirect-TCPX 和 TCPXO](" + GCP_NETWORK + ") "
            "让数据在 GPU 显存和网卡之间直接传输，但走的是 TCP，由 Google 的 NCCL 插件和每个节点上"
            "的守护进程完成。这比经主机内存中转的普通 TCP 快得多，但需要一整套专用软件才能做到。"
            "Google 的 A3 Ultra 和 A4 机型使用的是 RoCE，那才是 RDMA。",
            "目录把它与 RDMA 网络分开：[TCPX 实例](table:tcpx)。",
        ),
    ),
    Entry(
        "units",
        "为什么 NVLink 的数字用 GB/s，网络的数字用 Gb/s？",
        (
            "因为厂商就是这样标注的。NVLink 按每块 GPU、以字节每秒计，并把两个方向相加："
            "NVLink 4 是 {nvlink4}，即每个方向 {nvlink4_one_way}。网络按每个端口、以比特每秒计，"
            "只算一个方向：NDR InfiniBand 是 {ndr}，即每个方向 {ndr_bytes}。",
            "每块 GPU 配一个 NDR 端口的 H100 节点，网络总带宽为 {hgx_ndr_node}，整个节点每个方向"
            "合 {hgx_ndr_node_bytes}。而在节点内部，每块 GPU 都有自己的 NVLink 带宽，比它分到的"
            "网络带宽高出一个数量级；正因为有这个差距，才要把流量最大的通信安排在 NVLink 互联域之内。",
        ),
    ),
    Entry(
        "cost-and-availability",
        "为什么带 NVLink 和 InfiniBand 的实例更贵，而且更难租到？",
        (
            "硬件本身更贵：带 NVSwitch 的 SXM 主板、每块 GPU 一张高速网卡，以及规模足以让节点之间"
            "互不阻塞的交换网络。云厂商按整个节点出租，最新 GPU 的需求又超过供给，所以按需容量紧张，"
            "竞价实例很少（[NVLink 实例的竞价价格](table:spot-nvlink)），多节点集群也常常以预留容量"
            "块或通过销售渠道出售。",
            "本站的价格是按所示日期从云厂商 API 和页面读取的参考价，不是报价。据此做计划之前，"
            "请先向云厂商核实。",
        ),
    ),
    Entry(
        "nvlink-between-instances",
        "NVLink 能连接两个不同实例里的 GPU 吗？",
        (
            "通常不能：NVLink 互联域止于服务器的边界，两个普通的 8 卡实例之间只能通过网络交换数据，"
            "无论它们各自的 NVLink 有多快。",
            "例外是 GB200 NVL72 这样的整机柜系统，NVLink 交换托盘把 {nvl72} 块 GPU（每个计算托盘"
            "四块）连成一个互联域。云厂商把它们按每节点四块 GPU 出租，这些节点共享整个机柜的 "
            "NVLink 互联域：[GB200 和 GB300 实例](table:nvl72)。",
        ),
    ),
)

FAQ = {"en": ENGLISH, "zh-hans": CHINESE}

# The four questions a buyer of `/nvlink-infiniband/` asks first. Both FAQs show them, from these
# same entries; only that page marks them up as FAQPage JSON-LD, since a question and answer
# repeated across a site is marked up on one page of it.
SEED_PAGE_SLUGS = (
    "do-i-need-both",
    "single-gpu-job",
    "why-interconnect-matters",
    "every-multi-gpu-nvlink",
)


def seed_page_entries(language: str) -> tuple[Entry, ...]:
    entries = {entry.slug: entry for entry in FAQ[language]}
    return tuple(entries[slug] for slug in SEED_PAGE_SLUGS)


@dataclass(frozen=True)
class RenderedEntry:
    slug: str
    question: str
    paragraphs: tuple[SafeString, ...]
    answer_for_jsonld: str


def faq_entries(
    language: str,
    counts: Counts,
    absolute: Absolute | None = None,
    faq: dict[str, tuple[Entry, ...]] | None = None,
) -> list[RenderedEntry]:
    """A FAQ (this module's unless `faq` is given) in `language` (English when there is none),
    rendered for the page and JSON-LD.

    `counts`: the table links' live counts (`table_link_counts()`); `absolute` turns the site's
    own paths into absolute URLs in the JSON-LD copy.
    """
    faq = FAQ if faq is None else faq
    entries = faq.get(language, faq["en"])
    return [
        RenderedEntry(
            slug=entry.slug,
            question=entry.question,
            paragraphs=tuple(render_markup(paragraph, counts) for paragraph in entry.answer),
            answer_for_jsonld="".join(
                f"<p>{render_markup(paragraph, counts, plain=True, absolute=absolute)}</p>"
                for paragraph in entry.answer
            ),
        )
        for entry in entries
    ]


def faq_jsonld(entries: list[RenderedEntry], language: str) -> dict:
    """schema.org FAQPage: the same questions and answers the page shows."""
    return {
        "@context": "https://schema.org",
        "@type": "FAQPage",
        "inLanguage": language,
        "mainEntity": [
            {
                "@type": "Question",
                "name": entry.question,
                "acceptedAnswer": {"@type": "Answer", "text": entry.answer_for_jsonld},
            }
            for entry in entries
        ],
    }
