#!/usr/bin/env python3
"""longmix's operators against the PyTorch modules they follow, on the GPU machine.

For each operator: PyTorch builds the module with its own default initialisation (the Hyena
transcription of SPEC §3 in peers.py with the reference module's parameter names; the
attention layer with the FlashAttention library's MHA names), saves its state_dict as
safetensors and a random input as .npy, computes the output in float64, then `longmix run`
computes it from those files on each backend / implementation / dtype named below; the relative
L2 error of each is printed and checked (fp32 <= 1e-4, fp16 <= 5e-3, bf16 <= 2e-2).
Exit status 1 when any check fails.

Usage: check_torch.py LONGMIX_BINARY OUT_DIR [--cpu]
"""
import json
import math
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers import HyenaOperator  # noqa: E402

TOL = {"fp32": 1e-4, "fp16": 5e-3, "bf16": 2e-2}


def rel_l2(a, b):
    return float(np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(b))


def save_state(module_state, path):
    # The shared Sin freq appears under several names; safetensors wants distinct storage.
    save_file({k: v.detach().float().contiguous().clone().cpu() for k, v in module_state.items()}, path)


def main():
    exe, out = sys.argv[1], sys.argv[2]
    with_cpu = "--cpu" in sys.argv
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    dev = "cuda"
    rows, ok = [], True

    def check(name, args, ref, dtype):
        nonlocal ok
        y_path = os.path.join(out, "y.npy")
        if os.path.exists(y_path):
            os.remove(y_path)
        r = subprocess.run([exe, "run"] + args + ["--output", y_path, "--dtype", dtype], capture_output=True, text=True)
        if r.returncode != 0:
            rows.append({"check": name, "dtype": dtype, "error": r.stderr.strip()})
            print(f"{name:48s} {dtype}: FAILED to run: {r.stderr.strip()}")
            ok = False
            return
        err = rel_l2(np.load(y_path), ref)
        passed = err <= TOL[dtype] and math.isfinite(err)
        ok = ok and passed
        rows.append({"check": name, "dtype": dtype, "rel_l2": err, "passed": passed, "longmix": r.stderr.strip()})
        print(f"{name:48s} {dtype}: rel L2 {err:.3e} {'ok' if passed else 'FAILED'}  ({r.stderr.strip()})")

    # Hyena: D = 256, order 2, l_max = L = 3000 (not a power of two), B = 2.
    B, L, D = 2, 3000, 256
    m = HyenaOperator(D, l_max=L).to(dev)
    w_path, x_path = os.path.join(out, "hyena.safetensors"), os.path.join(out, "x.npy")
    save_state(m.state_dict(), w_path)
    u = torch.randn(B, L, D, device=dev)
    np.save(x_path, u.cpu().numpy())
    with torch.no_grad():
        ref = m.double()(u.double()).cpu().numpy()
    base = ["hyena", "--weights", w_path, "--input", x_path]
    for impl in ("hyena-fused", "hyena-cuda"):
        for dt in ("fp16", "bf16"):
            check(f"hyena {impl} (B={B}, L={L}, D={D})", base + ["--backend", "cuda", "--impl", impl], ref, dt)
    if with_cpu:
        check(f"hyena hyena-cpu (B={B}, L={L}, D={D})", base + ["--backend", "cpu"], ref, "fp32")

    # Attention layer: Wqkv (3D, D) + bias, causal SDPA over (3, H, d) channels, out_proj.
    B, L, H, d = 2, 1000, 4, 64
    D = H * d
    wqkv, oproj = torch.nn.Linear(D, 3 * D).to(dev), torch.nn.Linear(D, D).to(dev)
    save_state({"Wqkv.weight": wqkv.weight, "Wqkv.bias": wqkv.bias, "out_proj.weight": oproj.weight,
                "out_proj.bias": oproj.bias}, os.path.join(out, "mha.safetensors"))
    x = torch.randn(B, L, D, device=dev)
    np.save(os.path.join(out, "xa.npy"), x.cpu().numpy())
    with torch.no_grad():
        qkv = F.linear(x.double(), wqkv.weight.double(), wqkv.bias.double()).view(B, L, 3, H, d)
        q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, L, D)
        ref = F.linear(o, oproj.weight.double(), oproj.bias.double()).cpu().numpy()
    base = ["attention-layer", "--weights", os.path.join(out, "mha.safetensors"), "--heads", str(H), "--causal",
            "--input", os.path.join(out, "xa.npy")]
    for impl in ("flash-own", "flash-cudnn"):
        for dt in ("fp16", "bf16"):
            check(f"attention-layer {impl} (B={B}, L={L}, H={H})", base + ["--backend", "cuda", "--impl", impl], ref, dt)

    # Core flash on q, k, v of shape (B, L, H, d), d = 128, not causal.
    B, L, H, d = 1, 777, 2, 128
    qkv = [torch.randn(B, L, H, d, device=dev) for _ in range(3)]
    names = ["q.npy", "k.npy", "v.npy"]
    for t, n in zip(qkv, names):
        np.save(os.path.join(out, n), t.cpu().numpy())
    with torch.no_grad():
        q, k, v = (t.double().transpose(1, 2) for t in qkv)
        ref = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).cpu().numpy()
    base = ["flash", "--q", os.path.join(out, names[0]), "--k", os.path.join(out, names[1]), "--v",
            os.path.join(out, names[2])]
    for impl in ("flash-own", "flash-cudnn"):
        check(f"flash {impl} (B={B}, L={L}, H={H}, d={d})", base + ["--backend", "cuda", "--impl", impl], ref, "fp16")

    with open(os.path.join(out, "check_torch.json"), "w") as f:
        json.dump({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    print("all checks passed" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
