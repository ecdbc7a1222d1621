"""Cases of numpyro 0.22.0 for run.py (the same calls under JAX and tangentia)."""
import numpyro, numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS, SVI, Trace_ELBO, Predictive, HMC
from numpyro.infer.autoguide import AutoNormal
import optax as _o
numpyro.enable_x64()
_data = jnp.array([0.5, 1.2, 0.8, 1.9, 1.1])
def _model(y=None):
    mu = numpyro.sample("mu", dist.Normal(0.0, 2.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    numpyro.sample("obs", dist.Normal(mu, sigma), obs=y)
case("dist_logprob")(lambda: (dist.Normal(1.0, 2.0).log_prob(0.3), dist.Gamma(2.0, 3.0).log_prob(0.7), dist.Beta(2.0, 3.0).log_prob(0.4), dist.MultivariateNormal(jnp.zeros(2), jnp.eye(2) * 2).log_prob(jnp.ones(2)), dist.Dirichlet(jnp.ones(3)).log_prob(jnp.array([0.2, 0.3, 0.5])), dist.Poisson(3.0).log_prob(2)))
case("dist_sample")(lambda: (dist.Normal(1.0, 2.0).sample(jr.PRNGKey(0), (3,)), dist.Gamma(2.0).sample(jr.PRNGKey(1), (3,))))
case("log_density")(lambda: numpyro.infer.util.log_density(_model, (_data,), {}, {"mu": 1.0, "sigma": 0.5})[0])
case("potential_grad")(lambda: jax.grad(lambda p: numpyro.infer.util.potential_energy(_model, (_data,), {}, p))({"mu": 1.0, "sigma": 0.5}))
def _nuts():
    m = MCMC(NUTS(_model), num_warmup=50, num_samples=50, progress_bar=False)
    m.run(jr.PRNGKey(0), _data)
    s = m.get_samples()
    return jnp.array([s["mu"].mean(), s["sigma"].mean(), s["mu"].shape[0]])
case("nuts")(_nuts)
def _svi():
    svi = SVI(_model, AutoNormal(_model), numpyro.optim.Adam(0.05), Trace_ELBO())
    r = svi.run(jr.PRNGKey(0), 50, _data, progress_bar=False)
    return r.losses[-1]
case("svi")(_svi)
case("predictive")(lambda: Predictive(_model, num_samples=5)(jr.PRNGKey(0))["obs"])
