"""Cases of blackjax 1.7.1 for run.py (the same calls under JAX and tangentia)."""
import blackjax
def _logdensity(x): return -0.5 * jnp.sum((x - 1.0) ** 2 / jnp.array([1.0, 4.0]))
def _run(kernel, n=100):
    state = kernel.init(jnp.zeros(2))
    step = jax.jit(kernel.step)
    keys = jr.split(jr.PRNGKey(0), n)
    xs = []
    for k in keys:
        state, info = step(k, state)
        xs.append(state.position)
    return jnp.stack(xs).mean(0)
case("hmc")(lambda: _run(blackjax.hmc(_logdensity, 0.3, jnp.ones(2), 5)))
case("nuts")(lambda: _run(blackjax.nuts(_logdensity, 0.3, jnp.ones(2))))
case("mala")(lambda: _run(blackjax.mala(_logdensity, 0.1)))
case("rmh")(lambda: _run(blackjax.rmh(_logdensity, blackjax.mcmc.random_walk.normal(jnp.ones(2) * 0.5))))
def _window():
    warm = blackjax.window_adaptation(blackjax.nuts, _logdensity)
    (state, params), _ = warm.run(jr.PRNGKey(1), jnp.zeros(2), num_steps=50)
    return params["step_size"], state.position
case("window_adaptation")(_window)
case("scan_loop")(lambda: jax.lax.scan(lambda s, k: blackjax.nuts(_logdensity, 0.3, jnp.ones(2)).step(k, s), blackjax.nuts(_logdensity, 0.3, jnp.ones(2)).init(jnp.zeros(2)), jr.split(jr.PRNGKey(2), 20))[0].position)
case("meanfield_vi")(lambda: blackjax.meanfield_vi(_logdensity, __import__("optax").adam(0.1)).step(jr.PRNGKey(0), blackjax.meanfield_vi(_logdensity, __import__("optax").adam(0.1)).init(jnp.zeros(2)))[0].mu)
