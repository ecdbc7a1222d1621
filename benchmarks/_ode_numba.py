"""Hand-written numba references for the odeint benchmark (``bench_ode.py``).

Two reverse-mode gradients of ``loss = sum(odeint(f, y0, ts, *args)[-1]**2)``
written directly in numba, against which tangentia and JAX are measured:

* **(a) "physical limit"** -- :func:`grad_one_sweep`: Dormand-Prince 5(4)
  forward with dense output (the forward pass of (b)), then ONE backward sweep
  of the adjoint system ``(y, a, args_bar)`` from ``ts[-1]`` to ``ts[0]`` with
  a single adaptive step-size sequence, stopping only at the output times
  whose cotangent is nonzero (to add it).  No allocation inside the loops.
* **(b) JAX's algorithm** -- :func:`grad_jax_algorithm`: a line-by-line
  transcription of ``jax.experimental.ode`` (``odeint``/``_odeint_rev``):
  Hairer's initial step with ``order = 4`` and 2-norms, the step controller of
  ``optimal_step_size``, ``mean_error_ratio``, the quartic dense output of
  ``interp_fit_dopri`` evaluated by ``polyval``, and the backward pass that
  restarts a full ``odeint`` of the augmented state
  ``(y, y_bar, t0_bar, args_bar)`` between every pair of consecutive output
  times (``[-ts[i], -ts[i-1]]``), adding ``g[i-1]`` after each.

Dynamics are numba functions ``f(y, t, args, out)`` writing ``dy/dt`` into
``out``; the adjoint dynamics are written by hand for the damped pendulum
(:func:`pend`, :func:`pend_aug_jax`, :func:`pend_adjoint`).  The integrators
take an integer code ``fun`` (``PEND``, ...) selecting the dynamics: with
function arguments numba would re-specialise and recompile them in every
process (no disk cache), which takes 10-30 s.
"""
from __future__ import annotations

import numpy as np
from numba import njit

# Dormand-Prince tableau, exactly as in jax.experimental.ode.runge_kutta_step.
ALPHA = np.array([1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0, 0.0])
BETA = np.array([
    [1 / 5, 0, 0, 0, 0, 0, 0],
    [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
    [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
    [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]])
C_SOL = np.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0])
C_ERR = np.array([35 / 384 - 1951 / 21600, 0, 500 / 1113 - 22642 / 50085,
                  125 / 192 - 451 / 720, -2187 / 6784 - -12231 / 42400,
                  11 / 84 - 649 / 6300, -1.0 / 60.0])
# interp_fit_dopri's midpoint weights.
C_MID = np.array([6025192743 / 30085553152 / 2, 0, 51252292925 / 65400821598 / 2,
                  -2691868925 / 45128329728 / 2, 187940372067 / 1594534317056 / 2,
                  -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2])


# ---------------------------------------------------------------------------
# The damped pendulum and its adjoint systems (args = [b, c])


@njit(cache=True)
def pend(y, t, args, out):
    out[0] = y[1]
    out[1] = -args[0] * y[1] - args[1] * np.sin(y[0])


@njit(cache=True)
def pend_aug_jax(s, t, args, out):
    """JAX's ``aug_dynamics`` for the pendulum, state ``(y, y_bar, t0_bar, args_bar)``
    (7 numbers, in ``ravel_pytree`` order), in negative time ``t``:
    ``(-f(y, -t), y_bar^T df/dy, y_bar^T df/dt, y_bar^T df/dargs)``."""
    b, c = args[0], args[1]
    y0, y1, a0, a1 = s[0], s[1], s[2], s[3]
    out[0] = -y1
    out[1] = b * y1 + c * np.sin(y0)
    out[2] = -c * np.cos(y0) * a1
    out[3] = a0 - b * a1
    out[4] = 0.0
    out[5] = -y1 * a1
    out[6] = -np.sin(y0) * a1


@njit(cache=True)
def pend_adjoint(s, t, args, out):
    """The adjoint system of reference (a): state ``(y, a, args_bar)`` (6 numbers)."""
    b, c = args[0], args[1]
    y0, y1, a0, a1 = s[0], s[1], s[2], s[3]
    out[0] = -y1
    out[1] = b * y1 + c * np.sin(y0)
    out[2] = -c * np.cos(y0) * a1
    out[3] = a0 - b * a1
    out[4] = -y1 * a1
    out[5] = -np.sin(y0) * a1


PEND, PEND_AUG_JAX, PEND_ADJOINT = 0, 1, 2  # the ``fun`` codes of the integrators


@njit(cache=True)
def dynamics(fun, y, t, args, out):
    """Call the dynamics numbered ``fun`` (an integer code rather than a function
    argument, so that numba compiles each integrator once and caches it on disk)."""
    if fun == PEND:
        pend(y, t, args, out)
    elif fun == PEND_AUG_JAX:
        pend_aug_jax(y, t, args, out)
    else:
        pend_adjoint(y, t, args, out)


# ---------------------------------------------------------------------------
# Pieces of jax.experimental.ode


@njit(cache=True)
def _norm(v):
    acc = 0.0
    for x in v:
        acc += x * x
    return np.sqrt(acc)


@njit(cache=True)
def initial_step_size(fun, t0, y0, order, rtol, atol, f0, args):
    n = y0.shape[0]
    scale = np.empty(n)
    tmp = np.empty(n)
    for j in range(n):
        scale[j] = atol + np.abs(y0[j]) * rtol
    for j in range(n):
        tmp[j] = y0[j] / scale[j]
    d0 = _norm(tmp)
    for j in range(n):
        tmp[j] = f0[j] / scale[j]
    d1 = _norm(tmp)
    h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
    y1 = np.empty(n)
    for j in range(n):
        y1[j] = y0[j] + h0 * f0[j]
    f1 = np.empty(n)
    dynamics(fun, y1, t0 + h0, args, f1)
    for j in range(n):
        tmp[j] = (f1[j] - f0[j]) / scale[j]
    d2 = _norm(tmp) / h0
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1.0 / (order + 1.0))
    return min(100.0 * h0, h1)


@njit(cache=True)
def runge_kutta_step(fun, y0, f0, t0, dt, args, k, ytmp, y1, y1_err):
    """One step; fills ``k`` (7 x n stages), ``y1`` and ``y1_err``."""
    n = y0.shape[0]
    for j in range(n):
        k[0, j] = f0[j]
    for i in range(1, 7):
        for j in range(n):
            acc = 0.0
            for m in range(i):
                acc += BETA[i - 1, m] * k[m, j]
            ytmp[j] = y0[j] + dt * acc
        dynamics(fun, ytmp, t0 + dt * ALPHA[i - 1], args, k[i])
    for j in range(n):
        sol = 0.0
        err = 0.0
        for m in range(7):
            sol += C_SOL[m] * k[m, j]
            err += C_ERR[m] * k[m, j]
        y1[j] = dt * sol + y0[j]
        y1_err[j] = dt * err


@njit(cache=True)
def mean_error_ratio(err, rtol, atol, y0, y1):
    n = err.shape[0]
    acc = 0.0
    for j in range(n):
        r = err[j] / (atol + rtol * max(np.abs(y0[j]), np.abs(y1[j])))
        acc += r * r
    return np.sqrt(acc / n)


@njit(cache=True)
def optimal_step_size(last_step, ratio):
    safety, ifactor, dfactor, order = 0.9, 10.0, 0.2, 5.0
    if ratio < 1:
        dfactor = 1.0
    if ratio == 0:
        return last_step * ifactor
    return last_step * min(ifactor, max(ratio ** (-1.0 / order) * safety, dfactor))


@njit(cache=True)
def interp_fit_dopri(y0, y1, k, dt, coeff):
    """The quartic ``coeff`` (5 x n, highest power first) of interp_fit_dopri."""
    n = y0.shape[0]
    for j in range(n):
        acc = 0.0
        for m in range(7):
            acc += C_MID[m] * k[m, j]
        y_mid = y0[j] + dt * acc
        dy0, dy1 = k[0, j], k[6, j]
        coeff[0, j] = -2. * dt * dy0 + 2. * dt * dy1 - 8. * y0[j] - 8. * y1[j] + 16. * y_mid
        coeff[1, j] = 5. * dt * dy0 - 3. * dt * dy1 + 18. * y0[j] + 14. * y1[j] - 32. * y_mid
        coeff[2, j] = -4. * dt * dy0 + dt * dy1 - 11. * y0[j] - 5. * y1[j] + 16. * y_mid
        coeff[3, j] = dt * dy0
        coeff[4, j] = y0[j]


@njit(cache=True)
def odeint(fun, y0, ts, args, rtol, atol, ys):
    """JAX's ``_odeint`` forward pass: fills ``ys`` (len(ts) x n)."""
    n = y0.shape[0]
    k = np.empty((7, n))
    ytmp = np.empty(n)
    y_next = np.empty(n)
    err = np.empty(n)
    y = y0.copy()
    f = np.empty(n)
    dynamics(fun, y, ts[0], args, f)
    dt = max(0.0, initial_step_size(fun, ts[0], y, 4, rtol, atol, f, args))
    coeff = np.empty((5, n))
    for r in range(5):
        coeff[r] = y0
    t = ts[0]
    last_t = ts[0]
    ys[0] = y0
    for i in range(1, ts.shape[0]):
        target = ts[i]
        while t < target and dt > 0:
            runge_kutta_step(fun, y, f, t, dt, args, k, ytmp, y_next, err)
            ratio = mean_error_ratio(err, rtol, atol, y, y_next)
            if ratio <= 1.0:
                interp_fit_dopri(y, y_next, k, dt, coeff)
                last_t = t
                t = t + dt
                for j in range(n):
                    y[j] = y_next[j]
                    f[j] = k[6, j]
            dt = max(0.0, optimal_step_size(dt, ratio))
        s = (target - last_t) / (t - last_t)
        for j in range(n):
            ys[i, j] = (((coeff[0, j] * s + coeff[1, j]) * s + coeff[2, j]) * s
                        + coeff[3, j]) * s + coeff[4, j]


# ---------------------------------------------------------------------------
# (b) JAX's backward pass


@njit(cache=True)
def _odeint_rev(fun, aug_fun, ys, ts, g, args, rtol, atol):
    """``(y0_bar, ts_bar, args_bar)`` exactly as jax.experimental.ode._odeint_rev."""
    npts, n = ys.shape
    p = args.shape[0]
    m = 2 * n + 1 + p
    y_bar = g[npts - 1].copy()
    t0_bar = 0.0
    args_bar = np.zeros(p)
    ts_bar = np.zeros(npts)
    fbuf = np.empty(n)
    aug = np.empty(m)
    tt = np.empty(2)
    out = np.empty((2, m))
    for i in range(npts - 1, 0, -1):
        dynamics(fun, ys[i], ts[i], args, fbuf)
        t_bar = 0.0
        for j in range(n):
            t_bar += fbuf[j] * g[i, j]
        ts_bar[i] = t_bar
        t0_bar = t0_bar - t_bar
        aug[:n] = ys[i]
        aug[n:2 * n] = y_bar
        aug[2 * n] = t0_bar
        aug[2 * n + 1:] = args_bar
        tt[0] = -ts[i]
        tt[1] = -ts[i - 1]
        odeint(aug_fun, aug, tt, args, rtol, atol, out)
        for j in range(n):
            y_bar[j] = out[1, n + j] + g[i - 1, j]
        t0_bar = out[1, 2 * n]
        args_bar[:] = out[1, 2 * n + 1:]
    ts_bar[0] = t0_bar
    return y_bar, ts_bar, args_bar


@njit(cache=True)
def grad_jax_algorithm(fun, aug_fun, y0, ts, args, rtol, atol):
    """(b): gradient of ``sum(odeint(...)[-1]**2)`` w.r.t. ``(y0, args)``."""
    ys = np.empty((ts.shape[0], y0.shape[0]))
    odeint(fun, y0, ts, args, rtol, atol, ys)
    g = np.zeros_like(ys)
    g[-1] = 2.0 * ys[-1]
    y_bar, _, args_bar = _odeint_rev(fun, aug_fun, ys, ts, g, args, rtol, atol)
    return y_bar, args_bar


# ---------------------------------------------------------------------------
# (a) one backward sweep


@njit(cache=True)
def _sweep(fun, s, t, t_end, h, args, rtol, atol, f, k, ytmp, y_next, err):
    """Integrate ``s`` (in place) from ``t`` to exactly ``t_end`` (> t) with the
    same controller; ``f = fun(s, t)`` on entry and exit.  Returns the next
    step size (the one proposed before the step was clipped to ``t_end``)."""
    n = s.shape[0]
    while t < t_end:
        last = h >= t_end - t
        dt = t_end - t if last else h
        runge_kutta_step(fun, s, f, t, dt, args, k, ytmp, y_next, err)
        ratio = mean_error_ratio(err, rtol, atol, s, y_next)
        h_new = optimal_step_size(dt, ratio)
        if ratio <= 1.0:
            t = t_end if last else t + dt
            for j in range(n):
                s[j] = y_next[j]
                f[j] = k[6, j]
            if last:
                return max(h, h_new)
        h = h_new
    return h


@njit(cache=True)
def grad_one_sweep(fun, adj_fun, y0, ts, args, rtol, atol):
    """(a): the same gradient with one adaptive backward sweep of ``(y, a, args_bar)``."""
    npts, n, p = ts.shape[0], y0.shape[0], args.shape[0]
    ys = np.empty((npts, n))
    odeint(fun, y0, ts, args, rtol, atol, ys)
    g = np.zeros_like(ys)
    g[-1] = 2.0 * ys[-1]
    m = 2 * n + p
    s = np.zeros(m)
    s[:n] = ys[-1]
    s[n:2 * n] = g[-1]
    f = np.empty(m)
    k = np.empty((7, m))
    ytmp, y_next, err = np.empty(m), np.empty(m), np.empty(m)
    t = -ts[-1]
    dynamics(adj_fun, s, t, args, f)
    h = initial_step_size(adj_fun, t, s, 4, rtol, atol, f, args)
    for i in range(npts - 2, -1, -1):
        if i > 0:
            nonzero = False
            for j in range(n):
                if g[i, j] != 0.0:
                    nonzero = True
            if not nonzero:
                continue
        h = _sweep(adj_fun, s, t, -ts[i], h, args, rtol, atol, f, k, ytmp, y_next, err)
        t = -ts[i]
        for j in range(n):
            s[n + j] += g[i, j]
        dynamics(adj_fun, s, t, args, f)
    return s[n:2 * n].copy(), s[2 * n:].copy()
