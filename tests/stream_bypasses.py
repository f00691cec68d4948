"""ps12's bypasses (issue 41): answers that read a stream twice or keep it whole, each as it was written to get
full marks before the stream was redesigned (tests/test_streaming_tasks.py grades them in-process and in the
sandboxed re-check: each loses its points), and the honest one-pass answers that must keep theirs.
"""

# A fresh stream from a deep copy: a first pass for the maximum, a second for the sum.
DEEPCOPY_TWO_PASS = '''import copy


def online_softmax(blocks):
    first = copy.deepcopy(blocks)
    mu = max(np.max(xb) for xb in first)
    s = 0.0
    for xb in blocks:
        s += np.sum(np.exp(xb - mu))
    return mu, s
'''

# A fresh stream from astype: the maximum of every query first, then the sums.
ASTYPE_TWO_PASS = '''def blocked_attention(Q, blocks):
    first = blocks.astype(float)
    Q = Q / np.sqrt(Q.shape[1])
    mu = np.full((Q.shape[0], 1), -np.inf)
    for K_B, V_B in first:
        mu = np.maximum(mu, (Q @ K_B.T).max(axis=1, keepdims=True))
    s, acc = 0.0, 0.0
    for K_B, V_B in blocks:
        P = np.exp(Q @ K_B.T - mu)
        s, acc = s + P.sum(axis=1, keepdims=True), acc + P @ V_B
    return acc / s
'''

# The stream's arrays by their mangled name, then the matrix form.
MANGLED_DATA = '''def blocked_attention(Q, blocks):
    K, V = getattr(blocks, "_Blocks__data")
    S = Q @ K.T / np.sqrt(Q.shape[1])
    P = np.exp(S - S.max(axis=1, keepdims=True))
    return (P / P.sum(axis=1, keepdims=True)) @ V
'''

# Every block copied into an anonymous mmap (memory tracemalloc never saw), then the matrix form.
MMAP_COPY = '''import mmap


def blocked_attention(Q, blocks):
    buf, rows, d = None, 0, None
    for K_B, V_B in blocks:
        pair = np.hstack([K_B, V_B])
        if buf is None:
            d, buf = pair.shape[1], mmap.mmap(-1, 1 << 30)
        buf[rows * d * 8:(rows + len(pair)) * d * 8] = pair.tobytes()
        rows += len(pair)
    KV = np.frombuffer(buf, dtype=float, count=rows * d).reshape(rows, d)
    K, V = KV[:, :Q.shape[1]], KV[:, Q.shape[1]:]
    S = Q @ K.T / np.sqrt(Q.shape[1])
    P = np.exp(S - S.max(axis=1, keepdims=True))
    return (P / P.sum(axis=1, keepdims=True)) @ V
'''

# Every block written to a temporary file and read back: a second pass from the disk.
TEMPFILE_COPY = '''import tempfile


def online_softmax(blocks):
    f = tempfile.TemporaryFile()
    mu = -np.inf
    for xb in blocks:
        f.write(np.asarray(xb, dtype=float).tobytes())
        mu = max(mu, np.max(xb))
    f.seek(0)
    x = np.frombuffer(f.read(), dtype=float)
    return mu, float(np.sum(np.exp(x - mu)))
'''

# Every position kept, then the O(n^2) form tril(phi(Q) phi(K)^T).
KEPT_QUADRATIC_LINEAR = '''def causal_linear_attention(blocks):
    rows = [(q[0].copy(), k[0].copy(), v[0].copy()) for q, k, v in blocks]
    Q, K, V = (np.array(x) for x in zip(*rows))
    W = np.tril(phi(Q) @ phi(K).T)
    return W / W.sum(axis=1, keepdims=True) @ V
'''

# In the re-check, the data of the stream comes through a pipe: this answer reads its pipe itself, ahead of
# the loop, to keep a copy and make a second pass over the copy.
PIPE_READ_AHEAD = '''import os


def online_softmax(blocks):
    data = b""
    for fd in sorted(int(f) for f in os.listdir("/proc/self/fd")):
        try:
            if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith("pipe:"):
                os.set_blocking(fd, False)
                while chunk := os.read(fd, 1 << 20):
                    data += chunk
        except OSError:
            pass
    x = np.frombuffer(data[:len(data) // 8 * 8], dtype=float)
    mu = float(np.max(x))
    return mu, float(np.sum(np.exp(x - mu)))
'''

# An implementation with the eps of a widely used library in the denominator (fast-transformers'
# CausalLinearAttention: 1 / (Q . K_cumsum + eps), eps = 1e-6): right on every draw of the task's domain.
EPS_LINEAR = '''def causal_linear_attention(blocks):
    eps = 1e-6
    Sigma, zeta, out = 0.0, 0.0, []
    for q, k, v in blocks:
        fq, fk = phi(q[0]), phi(k[0])
        Sigma = Sigma + np.outer(fk, v[0])
        zeta = zeta + fk
        out.append(fq @ Sigma / (fq @ zeta + eps))
    return np.array(out)
'''

# One pass, written with PyTorch tensors (memory that tracemalloc did not see): right, keeps its points.
TORCH_ONE_PASS = '''import torch


def online_softmax(blocks):
    mu, s = torch.tensor(-float("inf"), dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64)
    for xb in blocks:
        x = torch.from_numpy(np.array(xb))
        mu_new = torch.maximum(mu, x.max())
        s = s * torch.exp(mu - mu_new) + torch.exp(x - mu_new).sum()
        mu = mu_new
    return float(mu), float(s)
'''

# The teacher's cheats after the redesign (issue 41): (a) the stream's source through the generators' frames (the
# kernel's Blocks, the re-check's Piped, whose pipe it drains itself), the flag `finished` set by hand, then the
# full matrix; (b) every block kept behind a ballast released as the copies grow (resident memory stays flat).
FRAMES_READ = '''import os


def blocked_attention(Q, blocks):
    src = blocks._blocks.gi_frame.f_locals["chunks"].gi_frame.f_locals["self"]
    if hasattr(src, "arrays"):
        K, V = src.arrays
    else:
        data = b""
        while chunk := os.read(src.fd, 1 << 20):
            data += chunk
        buf = np.frombuffer(data, dtype=float)
        dk, dv = src.shapes[0][0], src.shapes[1][0]
        Ks, Vs, i = [], [], 0
        for j0 in range(0, src.rows, src.size):
            m = min(src.size, src.rows - j0)
            Ks.append(buf[i:i + m * dk].reshape(m, dk))
            i += m * dk
            Vs.append(buf[i:i + m * dv].reshape(m, dv))
            i += m * dv
        K, V = np.concatenate(Ks), np.concatenate(Vs)
    blocks.finished = True
    S = Q @ K.T / np.sqrt(Q.shape[1])
    P = np.exp(S - S.max(axis=1, keepdims=True))
    return (P / P.sum(axis=1, keepdims=True)) @ V
'''

BALLAST_KEPT = '''def online_softmax(blocks):
    ballast = [np.ones(1 << 17) for _ in range(256)]
    kept = []
    for xb in blocks:
        kept.append(np.array(xb))
        n = sum(a.nbytes for a in kept) >> 20
        while ballast and len(ballast) > 256 - n:
            ballast.pop()
    x = np.concatenate(kept)
    mu = float(x.max())
    return mu, float(np.exp(x - mu).sum())
'''

# Task 4 in PyTorch, float32, its outputs stacked (issue 41 (c)): one output per position is the answer, not a
# kept block; right, keeps its points.
TORCH_STACK_LINEAR = '''import torch


def causal_linear_attention(blocks):
    Sigma, zeta, out = 0.0, 0.0, []
    for q, k, v in blocks:
        fq = torch.from_numpy(phi(q[0])).float()
        fk = torch.from_numpy(phi(k[0])).float()
        Sigma = Sigma + torch.outer(fk, torch.from_numpy(v[0]).float())
        zeta = zeta + fk
        out.append(fq @ Sigma / (fq @ zeta))
    return torch.stack(out)
'''

# In place on the block it was handed (issue 41 (d)): the answer owns each block; right, keeps its points.
IN_PLACE_ONE_PASS = '''def online_softmax(blocks):
    mu, s = -np.inf, 0.0
    for xb in blocks:
        mu_new = max(mu, float(np.max(xb)))
        xb -= mu_new
        np.exp(xb, out=xb)
        s = s * np.exp(mu - mu_new) + float(np.sum(xb))
        mu = mu_new
    return mu, s
'''
