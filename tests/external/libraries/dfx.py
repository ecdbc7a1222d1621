"""Cases of diffrax 0.7.2 for run.py (the same calls under JAX and tangentia)."""
import diffrax as dfx, equinox as eqx
def _vf(t, y, args):
    return -args * y + jnp.sin(t)
_term = dfx.ODETerm(_vf)
_y0 = jnp.array([1.0, 2.0])
_solvers = dict(Bosh3=dfx.Bosh3(), Dopri5=dfx.Dopri5(), Dopri8=dfx.Dopri8(), Euler=dfx.Euler(),
                Ralston=dfx.Ralston(), Midpoint=dfx.Midpoint(), Heun=dfx.Heun(),
                LeapfrogMidpoint=dfx.LeapfrogMidpoint(), ReversibleHeun=dfx.ReversibleHeun(),
                Tsit5=dfx.Tsit5(), ImplicitEuler=dfx.ImplicitEuler(), Kvaerno3=dfx.Kvaerno3(),
                Kvaerno4=dfx.Kvaerno4(), Kvaerno5=dfx.Kvaerno5()
)
for _n, _s in _solvers.items():
    case(f"solve_fixed[{_n}]")(lambda s=_s: dfx.diffeqsolve(_term, s, 0.0, 1.0, 0.05, _y0, args=0.7).ys)
for _n in ["Bosh3", "Dopri5", "Dopri8", "Tsit5", "Kvaerno3", "Kvaerno5"]:
    case(f"solve_adaptive[{_n}]")(lambda s=_solvers[_n]: dfx.diffeqsolve(
        _term, s, 0.0, 1.0, 0.05, _y0, args=0.7,
        stepsize_controller=dfx.PIDController(rtol=1e-6, atol=1e-8)).ys)
def _loss(a, adjoint, solver=dfx.Tsit5(), ctrl=dfx.ConstantStepSize()):
    return jnp.sum(dfx.diffeqsolve(_term, solver, 0.0, 1.0, 0.05, _y0, args=a, adjoint=adjoint,
                                   stepsize_controller=ctrl).ys)
for _n, _a in dict(Recursive=dfx.RecursiveCheckpointAdjoint(), Direct=dfx.DirectAdjoint(),
                   Backsolve=dfx.BacksolveAdjoint(), RecursiveN=dfx.RecursiveCheckpointAdjoint(checkpoints=5)).items():
    case(f"grad[{_n}]")(lambda a=_a: jax.grad(_loss)(0.7, a))
    case(f"grad_pid[{_n}]")(lambda a=_a: jax.grad(_loss)(0.7, a, dfx.Dopri5(), dfx.PIDController(rtol=1e-6, atol=1e-8)))
case("grad_jit")(lambda: jax.jit(jax.grad(_loss), static_argnums=1)(0.7, dfx.RecursiveCheckpointAdjoint()))
case("jacfwd[Direct]")(lambda: jax.jacfwd(_loss)(0.7, dfx.DirectAdjoint()))
case("hessian[Direct]")(lambda: jax.hessian(_loss)(0.7, dfx.DirectAdjoint()))
def _steady(a):
    term = dfx.ODETerm(lambda t, y, args: args - y)
    sol = dfx.diffeqsolve(term, dfx.Tsit5(), 0.0, jnp.inf, 0.1, jnp.array(0.0), args=a,
                          event=dfx.Event(dfx.steady_state_event()),
                          stepsize_controller=dfx.PIDController(rtol=1e-8, atol=1e-8),
                          adjoint=dfx.ImplicitAdjoint(), max_steps=None)
    return sol.ys[-1]
case("steady_state_value")(lambda: _steady(2.5))
case("grad[ImplicitAdjoint]")(lambda: jax.grad(_steady)(2.5))
case("saveat_ts")(lambda: dfx.diffeqsolve(_term, dfx.Tsit5(), 0.0, 1.0, 0.05, _y0, args=0.7, saveat=dfx.SaveAt(ts=jnp.linspace(0, 1, 5))).ys)
case("saveat_steps")(lambda: dfx.diffeqsolve(_term, dfx.Tsit5(), 0.0, 1.0, 0.1, _y0, args=0.7, saveat=dfx.SaveAt(steps=True)).ys)
case("saveat_t0t1")(lambda: dfx.diffeqsolve(_term, dfx.Tsit5(), 0.0, 1.0, 0.1, _y0, args=0.7, saveat=dfx.SaveAt(t0=True, t1=True)).ys)
case("dense")(lambda: dfx.diffeqsolve(_term, dfx.Tsit5(), 0.0, 1.0, 0.1, _y0, args=0.7, saveat=dfx.SaveAt(dense=True)).evaluate(0.33))
case("dense_derivative")(lambda: dfx.diffeqsolve(_term, dfx.Tsit5(), 0.0, 1.0, 0.1, _y0, args=0.7, saveat=dfx.SaveAt(dense=True)).derivative(0.33))
case("vmap_args")(lambda: jax.vmap(lambda a: dfx.diffeqsolve(_term, dfx.Tsit5(), 0.0, 1.0, 0.1, _y0, args=a).ys)(jnp.array([0.5, 1.0, 2.0])))
case("vmap_y0_pid")(lambda: jax.vmap(lambda y: dfx.diffeqsolve(_term, dfx.Dopri5(), 0.0, 1.0, 0.1, y, args=0.7, stepsize_controller=dfx.PIDController(rtol=1e-6, atol=1e-8)).ys)(jnp.stack([_y0, 3 * _y0])))
case("event_terminate")(lambda: dfx.diffeqsolve(dfx.ODETerm(lambda t, y, args: -y), dfx.Tsit5(), 0.0, 10.0, 0.1, jnp.array(1.0), event=dfx.Event(lambda t, y, args, **kw: y - 0.5, root_finder=__import__("optimistix").Newton(1e-8, 1e-8))).ts)
case("linear_interp")(lambda: dfx.LinearInterpolation(jnp.linspace(0, 1, 5), jnp.linspace(0, 1, 5) ** 2).evaluate(0.3))
case("cubic_interp")(lambda: dfx.CubicInterpolation(jnp.linspace(0, 1, 5), dfx.backward_hermite_coefficients(jnp.linspace(0, 1, 5), jnp.linspace(0, 1, 5) ** 2)).evaluate(0.3))
def _sde(solver):
    bm = dfx.VirtualBrownianTree(0.0, 1.0, tol=1e-3, shape=(2,), key=jr.PRNGKey(0))
    terms = dfx.MultiTerm(dfx.ODETerm(lambda t, y, a: -y), dfx.ControlTerm(lambda t, y, a: 0.1 * jnp.diag(y), bm))
    return dfx.diffeqsolve(terms, solver, 0.0, 1.0, 0.05, _y0).ys
case("sde[Euler]")(lambda: _sde(dfx.Euler()))
case("sde[Heun]")(lambda: _sde(dfx.Heun()))
case("sde[SRA1-like ItoMilstein]")(lambda: _sde(dfx.ItoMilstein()))
case("brownian_evaluate")(lambda: dfx.VirtualBrownianTree(0.0, 1.0, tol=1e-3, shape=(3,), key=jr.PRNGKey(1)).evaluate(0.2, 0.7))
case("cde")(lambda: dfx.diffeqsolve(dfx.ControlTerm(lambda t, y, a: jnp.ones((2, 1)) * y[0], dfx.LinearInterpolation(jnp.linspace(0, 1, 5), jnp.linspace(0, 1, 5)[:, None] ** 2)).to_ode(), dfx.Tsit5(), 0.0, 1.0, 0.1, _y0).ys)
case("max_steps_error")(lambda: dfx.diffeqsolve(_term, dfx.Tsit5(), 0.0, 1.0, 0.01, _y0, args=0.7, max_steps=5, throw=False).result._value)
case("pytree_state")(lambda: dfx.diffeqsolve(dfx.ODETerm(lambda t, y, a: {"x": -y["x"], "v": y["x"]}), dfx.Tsit5(), 0.0, 1.0, 0.1, {"x": jnp.array(1.0), "v": jnp.zeros(2)}).ys)
