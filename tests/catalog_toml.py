"""TOML snippets of a small, valid catalog, shared by the load_catalog and lint_catalog tests."""

GPU_H100 = """
[[gpus]]
slug = "h100-sxm"
vendor = "nvidia"
name = "H100 SXM"
form_factor = "sxm"
memory_gib = 80
nvlink_generation = 4
source_url = "https://www.nvidia.com/en-us/data-center/h100/"
verified_at = 2026-11-01
"""

GPU_GB200 = """
[[gpus]]
slug = "gb200"
vendor = "nvidia"
name = "GB200"
form_factor = "superchip"
memory_gib = 186
nvlink_generation = 5
source_url = "https://www.nvidia.com/en-us/data-center/gb200-nvl72/"
verified_at = 2026-11-01
"""

GPU_L40S = """
[[gpus]]
slug = "l40s"
vendor = "nvidia"
name = "L40S"
form_factor = "pcie"
memory_gib = 48
source_url = "https://www.nvidia.com/en-us/data-center/l40s/"
verified_at = 2026-11-01
"""

GPU_MI300X = """
[[gpus]]
slug = "mi300x"
vendor = "amd"
name = "MI300X"
form_factor = "oam"
memory_gib = 192
source_url = "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html"
verified_at = 2026-11-01
"""

RATES = """
[[rates]]
currency = "CNY"
rate_date = 2026-11-27
usd_per_unit = "0.1400"
source_url = "https://www.ecb.europa.eu/stats/eurofxref/"
"""

# A provider charging in CNY; each test file adds its regions and instances.
ACME = """
[provider]
slug = "acme"
name = "Acme Cloud"
website = "https://acme.example"
kind = "specialist"
home_currency = "CNY"
source_url = "https://acme.example/docs"
verified_at = 2026-11-01
"""
