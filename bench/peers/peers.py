#!/usr/bin/env python3
"""Peers measured in the same run as longmix on the GPU machine (its python3 with PyTorch).

Times, on the shapes of a longmix sweep: PyTorch SDPA with its FlashAttention-2 backend and with
its cuDNN backend (core: q, k, v; layer: Wqkv + attention + out_proj), naive (materialising)
attention, and a PyTorch transcription of SPEC §3's HyenaOperator (the reference module's
computation: in_proj, Conv1d short filter, implicit filter MLP with a shared Sin freq,
exponential modulation, fftconv with the skip term, gating, out_proj). Protocol as SPEC §4:
3 warm-up calls, then repeats until >= 10 calls and >= 0.3 s, each timed with CUDA events;
median/min/max. Peak memory: torch.cuda.max_memory_allocated() after the inputs exist.
Writes one JSON file with every row and the environment.
"""
import argparse
import json
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


# ---- Hyena, transcribed from SPEC §3 (names as in the reference module) -------------------------
class Sin(nn.Module):
    def __init__(self, dim, w=1.0, freq=None):
        super().__init__()
        self.freq = freq if freq is not None else nn.Parameter(w * torch.ones(1, dim))

    def forward(self, x):
        return torch.sin(self.freq * x)


class PositionalEmbedding(nn.Module):
    def __init__(self, emb_dim, seq_len):
        super().__init__()
        t = torch.linspace(0, 1, seq_len)[None, :, None]
        bands = (emb_dim - 1) // 2
        t_rescaled = torch.linspace(0, seq_len - 1, seq_len)[None, :, None]
        w = 2 * math.pi * t_rescaled / seq_len
        f = torch.linspace(1e-4, bands - 1, bands)[None, None]
        z = torch.exp(-1j * f * w)
        self.register_buffer("z", torch.cat([t, z.real, z.imag], dim=-1))
        self.register_buffer("t", t)

    def forward(self, L):
        return self.z[:, :L], self.t[:, :L]


class ExponentialModulation(nn.Module):
    def __init__(self, d, fast_decay_pct=0.3, slow_decay_pct=1.5, target=1e-2, shift=0.0):
        super().__init__()
        max_decay = math.log(target) / fast_decay_pct
        min_decay = math.log(target) / slow_decay_pct
        self.register_buffer("deltas", torch.linspace(min_decay, max_decay, d)[None, None])
        self.shift = shift

    def forward(self, t, x):
        return x * (torch.exp(-t * self.deltas.abs()) + self.shift)


def fftconv(u, k, D):
    seqlen = u.shape[-1]
    fft_size = 2 * seqlen
    k_f = torch.fft.rfft(k, n=fft_size) / fft_size
    u_f = torch.fft.rfft(u.to(dtype=k.dtype), n=fft_size)
    y = torch.fft.irfft(u_f * k_f, n=fft_size, norm="forward")[..., :seqlen]
    out = y + u * D.unsqueeze(-1)
    return out.to(dtype=u.dtype)


class HyenaFilter(nn.Module):
    def __init__(self, d, emb_dim=3, order=64, seq_len=1024, num_inner_mlps=2, w=1):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(d))
        self.pos_emb = PositionalEmbedding(emb_dim, seq_len)
        act = Sin(dim=order, w=w)
        layers = [nn.Linear(emb_dim, order), act]
        for _ in range(num_inner_mlps):
            layers += [nn.Linear(order, order), act]
        layers.append(nn.Linear(order, d, bias=False))
        self.implicit_filter = nn.Sequential(*layers)
        self.modulation = ExponentialModulation(d)

    def filter(self, L):
        z, t = self.pos_emb(L)
        return self.modulation(t, self.implicit_filter(z))


class HyenaOperator(nn.Module):
    def __init__(self, d_model, l_max, order=2, filter_order=64):
        super().__init__()
        self.d_model, self.l_max, self.order = d_model, l_max, order
        inner = d_model * (order + 1)
        self.in_proj = nn.Linear(d_model, inner)
        self.out_proj = nn.Linear(d_model, d_model)
        self.short_filter = nn.Conv1d(inner, inner, 3, padding=2, groups=inner)
        self.filter_fn = HyenaFilter(d_model * (order - 1), order=filter_order, seq_len=l_max)

    def forward(self, u):
        l = u.size(-2)
        u = self.in_proj(u).transpose(1, 2)
        uc = self.short_filter(u)[..., :l]
        *x, v = uc.split(self.d_model, dim=1)
        k = self.filter_fn.filter(l)[0]  # (l, (N-1) D)
        k = k.transpose(0, 1).reshape(self.order - 1, self.d_model, l)
        bias = self.filter_fn.bias.reshape(self.order - 1, self.d_model)
        for o, x_i in enumerate(reversed(x[1:])):
            v = v * x_i
            v = fftconv(v, k[o], bias[o])
        y = (v * x[0]).transpose(1, 2)
        return self.out_proj(y)


# ---- measurement -------------------------------------------------------------------------------
def measure(fn, warmup=3, min_reps=10, min_seconds=0.3):
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    del out
    for _ in range(warmup - 1):
        fn()
    times = []
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    while len(times) < min_reps or sum(times) < min_seconds * 1e3:
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    n = len(times)
    med = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])
    return dict(time_ms=med, time_min_ms=times[0], time_max_ms=times[-1], reps=n,
                mem_GB=peak / 2**30, work_GB=(peak - base) / 2**30)


def parse_len(s):
    s = s.strip().lower()
    return int(s[:-1]) * 1024 if s.endswith("k") else int(s[:-1]) * 1048576 if s.endswith("m") else int(s)


def parse_lengths(spec):
    """A comma list of lengths, each an L or a doubling range A..B (as `longmix sweep --lengths`)."""
    out = []
    for part in spec.split(","):
        if ".." in part:
            lo, hi = (parse_len(x) for x in part.split(".."))
            if lo <= 0 or hi < lo:
                sys.exit(f"--lengths: bad range '{part}' (want A..B with 0 < A <= B)")
            while lo <= hi:
                out.append(lo)
                lo *= 2
        else:
            out.append(parse_len(part))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", default="4k,8k,16k,32k,64k,128k")
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"])
    ap.add_argument("--impls", default="torch-sdpa-flash,torch-sdpa-cudnn,torch-hyena,torch-naive")
    ap.add_argument("--scopes", default="layer,core")
    ap.add_argument("--naive-max", default="32k", help="longest length for naive attention")
    ap.add_argument("--l-max", default=None, help="Hyena l_max (default: the longest length)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.manual_seed(0)
    dt = torch.float16 if a.dtype == "fp16" else torch.bfloat16
    dev = "cuda"
    lengths = parse_lengths(a.lengths)
    H, d = a.heads, a.head_dim
    D = H * d
    l_max = parse_len(a.l_max) if a.l_max else max(lengths)
    impls = a.impls.split(",")
    rows = []
    hyena = HyenaOperator(D, l_max).to(dev).to(dt) if "torch-hyena" in impls else None
    wqkv = nn.Linear(D, 3 * D).to(dev).to(dt)
    wout = nn.Linear(D, D).to(dev).to(dt)
    backends = {"torch-sdpa-flash": SDPBackend.FLASH_ATTENTION, "torch-sdpa-cudnn": SDPBackend.CUDNN_ATTENTION}

    def attn_core(q, k, v, impl):
        if impl == "torch-naive":
            s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(d))
            L = q.shape[-2]
            mask = torch.ones(L, L, dtype=torch.bool, device=dev).tril()
            p = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
            return p @ v
        with sdpa_kernel(backends[impl]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    with torch.inference_mode():
        for L in lengths:
            for impl in impls:
                for scope in a.scopes.split(","):
                    if impl == "torch-naive" and L > parse_len(a.naive_max):
                        continue
                    if impl == "torch-hyena" and scope == "core":
                        continue
                    row = dict(impl=impl, L=L, D=D, H=H, d=d, scope=scope, dtype=a.dtype, B=1)
                    try:
                        if impl == "torch-hyena":
                            x = torch.randn(1, L, D, device=dev, dtype=dt)
                            r = measure(lambda: hyena(x))
                        elif scope == "core":
                            q, k, v = (torch.randn(1, L, H, d, device=dev, dtype=dt).transpose(1, 2) for _ in range(3))
                            r = measure(lambda: attn_core(q, k, v, impl))
                        else:
                            x = torch.randn(1, L, D, device=dev, dtype=dt)

                            def layer():
                                qkv = wqkv(x).view(1, L, 3, H, d).permute(2, 0, 3, 1, 4)
                                o = attn_core(qkv[0], qkv[1], qkv[2], impl)
                                return wout(o.transpose(1, 2).reshape(1, L, D))
                            r = measure(layer)
                        row.update(r, status="ok")
                    except torch.OutOfMemoryError as e:
                        row.update(status="OOM", note=str(e).splitlines()[0])
                    except RuntimeError as e:
                        row.update(status="error", note=str(e).splitlines()[0][:300])
                    torch.cuda.empty_cache()
                    rows.append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
    env = dict(torch=torch.__version__, cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version(),
               gpu=torch.cuda.get_device_name(0), date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               command=" ".join(sys.argv))
    with open(a.out, "w") as f:
        json.dump(dict(environment=env, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
