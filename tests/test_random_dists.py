"""The distributions of tangentia.random beyond the basic ones: JAX's numbers, statistics,
reparameterization gradients, vmap over keys and jit.

``JAX_VALUES`` were computed once with ``jax.random`` (jax 0.10.2, x64) and
baked in (see tests/test_random_jax.py for the format); the suite does not need jax.
"""
import numpy as np
import pytest
import scipy.stats as st

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.random as tr
from test_random_jax import check_baked

# JAX's binomial and poisson run both of their samplers on every element and select
# (so do we): the unused one may divide by zero; under jit/vmap NumPy says so.
pytestmark = pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning",
                                        "ignore:invalid value:RuntimeWarning")

JAX_VALUES = {
    ('R.gamma(K, np.array([0.2, 1.0, 2.5, 30.0]))', 0): ('float64', (4,), [0.0024818866723771414, 0.34852732423339494, 4.442491722277749, 20.293480238648723]),
    ('R.gamma(K, np.array([0.2, 1.0, 2.5, 30.0]))', 42): ('float64', (4,), [0.0062046467528092345, 0.5161877343182824, 5.75709708230657, 31.74751911922743]),
    ('R.gamma(K, 3.0, (3,), np.float32)', 0): ('float32', (3,), [2.5691018104553223, 2.7842020988464355, 1.9683666229248047]),
    ('R.gamma(K, 3.0, (3,), np.float32)', 42): ('float32', (3,), [5.062036514282227, 1.9191899299621582, 4.866050720214844]),
    ('R.loggamma(K, np.array([0.01, 0.5, 4.0]))', 0): ('float64', (3,), [-111.95421555141097, -4.881687065207668, 1.8658532764425764]),
    ('R.loggamma(K, np.array([0.01, 0.5, 4.0]))', 42): ('float64', (3,), [-107.42344335838611, -4.232979453538195, 2.0771368566502675]),
    ('R.loggamma(K, 2.0, (2,), np.float32)', 0): ('float32', (2,), [0.4636005759239197, 0.5652804970741272]),
    ('R.loggamma(K, 2.0, (2,), np.float32)', 42): ('float32', (2,), [1.3008772134780884, 0.08836379647254944]),
    ('R.beta(K, 0.5, 2.0, (4,))', 0): ('float64', (4,), [0.17558441650064077, 0.5598273103781134, 0.060962882929744604, 0.0018412921872540755]),
    ('R.beta(K, 0.5, 2.0, (4,))', 42): ('float64', (4,), [0.05412583995929669, 0.016976737327934654, 0.0605913600496202, 0.09257493644678183]),
    ('R.beta(K, np.array([1.0, 3.0], np.float32), 2.0, dtype=np.float32)', 0): ('float32', (2,), [0.13298454880714417, 0.8289490342140198]),
    ('R.beta(K, np.array([1.0, 3.0], np.float32), 2.0, dtype=np.float32)', 42): ('float32', (2,), [0.348246693611145, 0.7394753694534302]),
    ('R.dirichlet(K, np.array([0.5, 1.0, 3.0]), (2,))', 0): ('float64', (2, 3), [0.017581359231494204, 0.062492133539730925, 0.9199265072287749, 3.9359569728669766e-05, 0.09875083427927385, 0.9012098061509974]),
    ('R.dirichlet(K, np.array([0.5, 1.0, 3.0]), (2,))', 42): ('float64', (2, 3), [0.027462761091563287, 0.07136011651241299, 0.9011771223960237, 0.05723775475066185, 0.05373408950105422, 0.889028155748284]),
    ('R.dirichlet(K, np.array([2.0, 2.0]), dtype=np.float32)', 0): ('float32', (2,), [0.4746018648147583, 0.5253980755805969]),
    ('R.dirichlet(K, np.array([2.0, 2.0]), dtype=np.float32)', 42): ('float32', (2,), [0.7707433700561523, 0.22925662994384766]),
    ('R.chisquare(K, 3.0, (4,))', 0): ('float64', (4,), [1.813893477449012, 1.4483538511993956, 5.9802748258137335, 0.14985750791987346]),
    ('R.chisquare(K, 3.0, (4,))', 42): ('float64', (4,), [3.4123750492211147, 1.9269875304255157, 8.271386696089039, 3.2365955838289406]),
    ('R.chisquare(K, np.array([1.0, 5.0], np.float32), dtype=np.float32)', 0): ('float32', (2,), [1.7691295146942139, 4.545556545257568]),
    ('R.chisquare(K, np.array([1.0, 5.0], np.float32), dtype=np.float32)', 42): ('float32', (2,), [1.998908519744873, 3.001572847366333]),
    ('R.f(K, 3.0, 5.0, (4,))', 0): ('float64', (4,), [1.5479804676135491, 0.35745633257619785, 0.09343816273757813, 12.272738153164557]),
    ('R.f(K, 3.0, 5.0, (4,))', 42): ('float64', (4,), [1.158641615967818, 0.4334901445978058, 6.869564969322846, 1.2631808709546908]),
    ('R.t(K, 4.0, (4,))', 0): ('float64', (4,), [1.4388140107357852, -0.5761896547622787, 0.9048037143742826, 2.2456968546971896]),
    ('R.t(K, 4.0, (4,))', 42): ('float64', (4,), [-0.6868952295334372, -0.49185716623639475, 2.0658955546227156, -0.23200208559344343]),
    ('R.t(K, 2.5, (3,), np.float32)', 0): ('float32', (3,), [0.6737624406814575, -4.237166404724121, -1.9337533712387085]),
    ('R.t(K, 2.5, (3,), np.float32)', 42): ('float32', (3,), [0.09307815134525299, -2.2693676948547363, 2.606539726257324]),
    ('R.poisson(K, np.array([0.5, 3.0, 9.5, 20.0, 150.0]))', 0): ('int64', (5,), [0, 0, 10, 25, 138]),
    ('R.poisson(K, np.array([0.5, 3.0, 9.5, 20.0, 150.0]))', 42): ('int64', (5,), [1, 2, 13, 17, 132]),
    ('R.poisson(K, 4.0, (5,), np.int32)', 0): ('int32', (5,), [0, 1, 5, 5, 2]),
    ('R.poisson(K, 4.0, (5,), np.int32)', 42): ('int32', (5,), [6, 3, 2, 2, 5]),
    ('R.binomial(K, np.array([5.0, 50.0, 300.0]), 0.3)', 0): ('float64', (3,), [2.0, 18.0, 75.0]),
    ('R.binomial(K, np.array([5.0, 50.0, 300.0]), 0.3)', 42): ('float64', (3,), [1.0, 12.0, 75.0]),
    ('R.binomial(K, 40.0, 0.8, (4,))', 0): ('float64', (4,), [30.0, 36.0, 32.0, 34.0]),
    ('R.binomial(K, 40.0, 0.8, (4,))', 42): ('float64', (4,), [35.0, 33.0, 27.0, 32.0]),
    ('R.binomial(K, 10.0, np.array([0.2, 0.6]), dtype=np.float32)', 0): ('float32', (2,), [3.0, 8.0]),
    ('R.binomial(K, 10.0, np.array([0.2, 0.6]), dtype=np.float32)', 42): ('float32', (2,), [2.0, 8.0]),
    ('R.multinomial(K, 20.0, np.array([0.2, 0.3, 0.5]))', 0): ('float64', (3,), [3.0, 6.0, 11.0]),
    ('R.multinomial(K, 20.0, np.array([0.2, 0.3, 0.5]))', 42): ('float64', (3,), [5.0, 4.0, 11.0]),
    ('R.multinomial(K, np.array([10.0, 100.0]), np.array([0.5, 0.25, 0.25]), shape=(2, 3))', 0): ('float64', (2, 3), [6.0, 2.0, 2.0, 46.0, 22.0, 32.0]),
    ('R.multinomial(K, np.array([10.0, 100.0]), np.array([0.5, 0.25, 0.25]), shape=(2, 3))', 42): ('float64', (2, 3), [4.0, 5.0, 1.0, 49.0, 22.0, 29.0]),
    ('R.geometric(K, 0.3, (6,))', 0): ('int64', (6,), [3, 5, 1, 2, 2, 3]),
    ('R.geometric(K, 0.3, (6,))', 42): ('int64', (6,), [3, 12, 2, 1, 2, 2]),
    ('R.geometric(K, np.array([0.9, 0.05]))', 0): ('int64', (2,), [1, 30]),
    ('R.geometric(K, np.array([0.9, 0.05]))', 42): ('int64', (2,), [1, 82]),
    ('R.lognormal(K, 0.5, (4,))', 0): ('float64', (4,), [0.9021981814084403, 0.6754454443368441, 2.479466302303905, 1.0984740686804704]),
    ('R.lognormal(K, 0.5, (4,))', 42): ('float64', (4,), [0.9117806140267735, 0.33793142787224595, 1.0979752215045038, 1.3581624935912568]),
    ('R.lognormal(K, shape=(3,), dtype=np.float32)', 0): ('float32', (3,), [5.0664591789245605, 7.5781168937683105, 0.648175060749054]),
    ('R.lognormal(K, shape=(3,), dtype=np.float32)', 42): ('float32', (3,), [0.9720922112464905, 1.595411777496338, 1.3440709114074707]),
    ('R.pareto(K, 2.0, (4,))', 0): ('float64', (4,), [1.3113213298190585, 1.129597746173524, 5.369942118088253, 1.5330294228017152]),
    ('R.pareto(K, 2.0, (4,))', 42): ('float64', (4,), [1.3207465067932376, 1.0075905939607959, 1.532388301438321, 1.923855790200613]),
    ('R.weibull_min(K, 2.0, 1.5, (4,))', 0): ('float64', (4,), [1.3296393946277114, 0.7803592074120229, 4.488111486200361, 1.8009508304754442]),
    ('R.weibull_min(K, 2.0, 1.5, (4,))', 42): ('float64', (4,), [1.3529603556444487, 0.12231276251644208, 1.7997751636072923, 2.392848295534626]),
    ('R.rayleigh(K, 1.5, (4,))', 0): ('float64', (4,), [1.9799782672313753, 2.624879963441523, 0.3985266710419636, 1.5792859579533771]),
    ('R.rayleigh(K, 1.5, (4,))', 42): ('float64', (4,), [1.9576114756608267, 4.3469130436855, 1.5801691106685258, 1.1905103440231377]),
    ('R.maxwell(K, (4,))', 0): ('float64', (4,), [1.9890699115189192, 0.42460738321377167, 1.2403079123658307, 2.0746335163022582]),
    ('R.maxwell(K, (4,))', 42): ('float64', (4,), [2.1856811186160847, 0.866467331447922, 0.8407561365101462, 1.838019102640401]),
    ('R.maxwell(K, (3,), np.float32)', 0): ('float32', (3,), [2.631096601486206, 0.9910328388214111, 0.9649305939674377]),
    ('R.maxwell(K, (3,), np.float32)', 42): ('float32', (3,), [0.553582489490509, 0.293285071849823, 1.708603024482727]),
    ('R.double_sided_maxwell(K, 0.5, 2.0, (4,))', 0): ('float64', (4,), [4.469224084752314, -4.456414797376629, -2.766963006648971, -3.464421583444985]),
    ('R.double_sided_maxwell(K, 0.5, 2.0, (4,))', 42): ('float64', (4,), [-3.1956351413757687, -4.1877952518604795, 4.2138077011187836, 3.5376429105639677]),
    ('R.triangular(K, 0.0, 0.3, 1.0, (4,))', 0): ('float64', (4,), [0.3619717703749077, 0.2547324800288597, 0.8441957086062719, 0.45424398639067043]),
    ('R.triangular(K, 0.0, 0.3, 1.0, (4,))', 42): ('float64', (4,), [0.36652489919092823, 0.06710455166823168, 0.4540156527240682, 0.5651129202117424]),
    ('R.wald(K, 1.2, (4,))', 0): ('float64', (4,), [0.19747053078570215, 2.0209060126749447, 1.8843694108199294, 0.13804597316549927]),
    ('R.wald(K, 1.2, (4,))', 42): ('float64', (4,), [2.5914452329796975, 0.9028353531566895, 0.2307277880630726, 0.973048379254938]),
    ('R.wald(K, 0.5, (3,), np.float32)', 0): ('float32', (3,), [0.2493320107460022, 0.26619279384613037, 0.29635360836982727]),
    ('R.wald(K, 0.5, (3,), np.float32)', 42): ('float32', (3,), [0.5275740027427673, 0.704037606716156, 0.20668983459472656]),
    ('R.generalized_normal(K, 1.5, (4,))', 0): ('float64', (4,), [1.0052064165636194, -1.6840824023561447, -0.20287836833349696, -0.051962326358005614]),
    ('R.generalized_normal(K, 1.5, (4,))', 42): ('float64', (4,), [-0.4028062414861481, -0.09948843483645729, 0.35442502223499145, 0.38001581793817063]),
    ('R.generalized_normal(K, 3.0, (3,), np.float32)', 0): ('float32', (3,), [0.8928267359733582, -0.09650235623121262, -0.9955044984817505]),
    ('R.generalized_normal(K, 3.0, (3,), np.float32)', 42): ('float32', (3,), [-0.6937108635902405, -0.27624452114105225, 0.8334611654281616]),
    ('R.ball(K, 3, 2, (2,))', 0): ('float64', (2, 3), [-0.8670379536639613, -0.45310375921933566, 0.0845090035263144, -0.1435162069500032, -0.2651115120200421, -0.5463699076471065]),
    ('R.ball(K, 3, 2, (2,))', 42): ('float64', (2, 3), [-0.04422263011031423, -0.26116012882271694, -0.49768540810316086, 0.4324718391701501, -0.33135913797182875, -0.18032268701433754]),
    ('R.ball(K, 2, 1.0, (3,), np.float32)', 0): ('float32', (3, 2), [-0.6340225338935852, -0.3605864346027374, 0.8913546800613403, -0.10479354858398438, -0.5662208795547485, -0.031121663749217987]),
    ('R.ball(K, 2, 1.0, (3,), np.float32)', 42): ('float32', (3, 2), [-0.5438264012336731, -0.0415043830871582, -0.28874099254608154, 0.138953298330307, -0.7484667897224426, -0.08589895069599152]),
    ('R.orthogonal(K, 3)', 0): ('float64', (3, 3), [-0.16839832267285426, -0.9850127783673072, -0.037307256319482146, 0.15367415425926573, 0.011150401548176175, -0.988058663672362, 0.973666400382425, -0.17212058272743747, 0.1494932967323238]),
    ('R.orthogonal(K, 3)', 42): ('float64', (3, 3), [-0.24985348168396393, -0.9679399318215844, 0.025797792068838043, 0.8281911415011259, -0.19982480469811714, 0.5236119560957534, 0.5016698823224919, -0.15219177314357468, -0.851566200220483]),
    ('R.orthogonal(K, 2, (2,), m=3)', 0): ('float64', (2, 2, 3), [-0.1125125971706582, 0.9926666558433308, 0.04420210237908645, -0.8888259268561864, -0.08065642806203743, -0.45109091363107107, 0.7474096304271778, 0.053269690449681925, 0.6622244214947864, 0.5901617928526168, -0.5109977392416936, -0.6249722943834094]),
    ('R.orthogonal(K, 2, (2,), m=3)', 42): ('float64', (2, 2, 3), [-0.3323982541017758, 0.3364001079140078, 0.8811051969348128, -0.9177473674466865, 0.09995078745710298, -0.3843821140888083, 0.34712419411654083, -0.6709893419501881, -0.6551931752149098, -0.39635167490341616, 0.528209364564151, -0.7509328977931331]),
    ('R.orthogonal(K, 3, dtype=np.float32)', 0): ('float32', (3, 3), [0.9554101228713989, 0.2941357493400574, 0.02599557861685753, -0.04628981649875641, 0.2361408770084381, -0.9706156253814697, -0.2916313707828522, 0.9261326193809509, 0.23922686278820038]),
    ('R.orthogonal(K, 3, dtype=np.float32)', 42): ('float32', (3, 3), [-0.01952970027923584, 0.9952677488327026, 0.09518947452306747, 0.10594390332698822, -0.09261152893304825, 0.9900500178337097, -0.99418044090271, -0.02941983938217163, 0.10363386571407318]),
}


@pytest.mark.parametrize("expr,seed", list(JAX_VALUES))
def test_same_numbers_as_jax(expr, seed):
    check_baked(expr, seed, JAX_VALUES[expr, seed], {"R": tr})


# ---------------------------------------------------------------------------
# Statistics: sample moments against scipy.stats (fixed key, 20000 samples)

N = 20000
MOMENT_CASES = [
    ("gamma", lambda k: tr.gamma(k, 0.5, (N,)), st.gamma(0.5)),
    ("gamma", lambda k: tr.gamma(k, 4.0, (N,)), st.gamma(4.0)),
    ("loggamma", lambda k: np.exp(tr.loggamma(k, 0.3, (N,))), st.gamma(0.3)),
    ("beta", lambda k: tr.beta(k, 0.5, 2.0, (N,)), st.beta(0.5, 2.0)),
    ("chisquare", lambda k: tr.chisquare(k, 3.0, (N,)), st.chi2(3.0)),
    ("f", lambda k: tr.f(k, 4.0, 12.0, (N,)), st.f(4.0, 12.0)),
    ("t", lambda k: tr.t(k, 6.0, (N,)), st.t(6.0)),
    ("poisson", lambda k: tr.poisson(k, 3.5, (N,)), st.poisson(3.5)),
    ("poisson", lambda k: tr.poisson(k, 40.0, (N,)), st.poisson(40.0)),
    ("binomial", lambda k: tr.binomial(k, 20.0, 0.3, (N,)), st.binom(20, 0.3)),
    ("binomial", lambda k: tr.binomial(k, 200.0, 0.7, (N,)), st.binom(200, 0.7)),
    ("geometric", lambda k: tr.geometric(k, 0.3, (N,)), st.geom(0.3)),
    ("lognormal", lambda k: tr.lognormal(k, 0.5, (N,)), st.lognorm(0.5)),
    ("pareto", lambda k: tr.pareto(k, 5.0, (N,)), st.pareto(5.0)),
    ("weibull_min", lambda k: tr.weibull_min(k, 2.0, 1.5, (N,)), st.weibull_min(1.5, scale=2.0)),
    ("rayleigh", lambda k: tr.rayleigh(k, 1.5, (N,)), st.rayleigh(scale=1.5)),
    ("maxwell", lambda k: tr.maxwell(k, (N,)), st.maxwell()),
    ("triangular", lambda k: tr.triangular(k, 0.0, 0.3, 1.0, (N,)), st.triang(0.3)),
    ("wald", lambda k: tr.wald(k, 1.2, (N,)), st.invgauss(1.2)),
    ("generalized_normal", lambda k: tr.generalized_normal(k, 1.5, (N,)), st.gennorm(1.5)),
    ("double_sided_maxwell", lambda k: np.abs(tr.double_sided_maxwell(k, 1.0, 2.0, (N,)) - 1) / 2,
     st.maxwell()),
]


@pytest.mark.parametrize("name,draw,dist", MOMENT_CASES, ids=[c[0] for c in MOMENT_CASES])
def test_moments_match_scipy(name, draw, dist):
    x = np.asarray(draw(tr.PRNGKey(11)), np.float64)
    mean, var = dist.mean(), dist.var()
    se_mean = np.sqrt(var / N)
    assert abs(x.mean() - mean) < 5 * se_mean, (name, x.mean(), mean)
    kurt = dist.stats(moments="k")
    se_var = var * np.sqrt((2 + float(kurt)) / N)
    assert abs(x.var() - var) < 6 * se_var, (name, x.var(), var)
    # and the whole distribution: Kolmogorov-Smirnov (discrete ones only by their moments)
    if name not in ("poisson", "binomial", "geometric"):
        assert st.kstest(x, dist.cdf).pvalue > 1e-4, name


def test_dirichlet_multinomial_ball_orthogonal():
    alpha = np.array([0.5, 1.0, 3.0])
    d = tr.dirichlet(tr.PRNGKey(1), alpha, (N,))
    assert np.allclose(d.sum(-1), 1.0) and np.all(d >= 0)
    assert np.allclose(d.mean(0), alpha / alpha.sum(), atol=0.01)
    m = tr.multinomial(tr.PRNGKey(2), 30.0, np.array([0.2, 0.3, 0.5]), shape=(N, 3))
    assert np.all(m.sum(-1) == 30) and np.allclose(m.mean(0), [6, 9, 15], atol=0.1)
    b = tr.ball(tr.PRNGKey(3), 3, 2, (N,))
    r = np.linalg.norm(b, axis=-1)
    assert r.max() <= 1 and abs(np.mean(r ** 3) - 0.5) < 0.01   # uniform in the ball: r^3 ~ U(0, 1)
    q = tr.orthogonal(tr.PRNGKey(4), 4, (3,))
    assert np.allclose(np.einsum("bij,bkj->bik", q, q), np.eye(4), atol=1e-12)
    w = tr.orthogonal(tr.PRNGKey(4), 2, m=5)
    assert w.shape == (2, 5) and np.allclose(w @ w.T, np.eye(2), atol=1e-12)


# ---------------------------------------------------------------------------
# Reparameterization gradients.  JAX's (and our) gamma gradient is the *implicit*
# one, dx/da = -(dF/da) / (dF/dx) with F(a, x) the Gamma(a) CDF: it keeps the
# sample's CDF value fixed.  Marsaglia-Tsang is not the inverse CDF, so finite
# differences of same-key samples differ from it (e.g. 3.92 vs 3.13 at a = 0.3);
# we check the implicit derivative against finite differences of scipy's CDF
# instead, and unbiasedness: E[dx/da] = dE[x]/da.


def _fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_gamma_gradient_is_the_implicit_reparameterization():
    key = tr.PRNGKey(5)
    a = np.array([0.05, 0.3, 1.0, 2.5, 40.0])
    x = tr.gamma(key, a)
    jac = tg.jacfwd(lambda a: tr.gamma(key, a))(a)
    assert np.allclose(jac, np.diag(np.diag(jac)))     # elementwise
    implicit = -_fd(lambda a: st.gamma.cdf(x, a), a) / st.gamma.pdf(x, a)
    np.testing.assert_allclose(np.diag(jac), implicit, rtol=1e-5)
    g = tg.grad(lambda a: tnp.sum(tr.loggamma(key, a)))(a)
    lx = tr.loggamma(key, a)
    np.testing.assert_allclose(g, implicit / x * np.exp(lx - np.log(x)), rtol=1e-5)
    # reverse mode and jit agree with forward mode
    g2 = tg.jit(tg.grad(lambda a: tnp.sum(tr.gamma(key, a))))(a)
    np.testing.assert_allclose(g2, np.diag(jac), rtol=1e-12)
    # baked: jax.grad(lambda a: jax.random.gamma(PRNGKey(3), a).sum())([0.3, 1.5, 7.0])
    np.testing.assert_allclose(tg.grad(lambda a: tnp.sum(tr.gamma(tr.PRNGKey(3), a)))(
        np.array([0.3, 1.5, 7.0])), [2.222617, 0.67218518, 0.63935947], rtol=1e-7)
    # unbiased: E[x] = a, so the mean gradient is 1
    mean_grad = tg.grad(lambda a: tnp.mean(tr.gamma(tr.PRNGKey(12), a, (N,))))(0.7)
    assert abs(mean_grad - 1.0) < 0.03


def test_beta_and_friends_gradients_are_unbiased():
    key = tr.PRNGKey(6)
    cases = [  # (sampler, params, d mean / d param)
        (tr.beta, (0.7, 2.0), (2.0 / 2.7 ** 2, -0.7 / 2.7 ** 2)),
        (tr.chisquare, (3.0,), (1.0,)),                 # mean df
        (tr.f, (4.0, 12.0), (0.0, -2.0 / 10.0 ** 2)),   # mean dfden / (dfden - 2)
    ]
    for fn, params, want in cases:
        n = len(params)
        grads = tg.grad(lambda *p: tnp.mean(fn(key, *p, shape=(N,))), argnums=tuple(range(n)))(*params)
        np.testing.assert_allclose(grads, want, atol=0.03, err_msg=fn.__name__)
    # beta samples are a function of two log-gamma draws: its gradient is theirs, chained
    g = tg.grad(lambda a, b: tnp.sum(tr.beta(key, a, b, (3,))), argnums=(0, 1))(0.7, 2.0)
    ka, kb = tr.split(key)
    xa, xb = tr.gamma(ka, 0.7, (3,)), tr.gamma(kb, 2.0, (3,))
    da = -_fd(lambda a: st.gamma.cdf(xa, a), 0.7) / st.gamma.pdf(xa, 0.7)
    db = -_fd(lambda b: st.gamma.cdf(xb, b), 2.0) / st.gamma.pdf(xb, 2.0)
    np.testing.assert_allclose(g, [np.sum(xb / (xa + xb) ** 2 * da),
                                   np.sum(-xa / (xa + xb) ** 2 * db)], rtol=1e-5)
    # baked: jax.grad(jax.random.beta(PRNGKey(3), a, b), argnums=(0, 1))(0.7, 2.0)
    g = tg.grad(lambda a, b: tr.beta(tr.PRNGKey(3), a, b), argnums=(0, 1))(0.7, 2.0)
    np.testing.assert_allclose(g, [0.20327814, -0.13221019], rtol=1e-7)


# ---------------------------------------------------------------------------
# vmap over keys (and parameters) equals a loop; jit equals eager


def _samplers(k, a):
    return [tr.gamma(k, a, (3,)), tr.loggamma(k, a, (2,)), tr.beta(k, a, 2.0, (2,)),
            tr.dirichlet(k, tnp.stack([a, 1.0]), (2,)), tr.t(k, a + 1, (2,)),
            tr.poisson(k, a * 10, (3,)), tr.binomial(k, 30.0, 0.4, (3,)),
            tr.multinomial(k, 10.0, tnp.array([0.3, 0.7])), tr.geometric(k, 0.3, (2,)),
            tr.generalized_normal(k, 1.5, (2,)), tr.ball(k, 2), tr.orthogonal(k, 2),
            tr.wald(k, a, (2,)), tr.double_sided_maxwell(k, 0.0, a, (2,))]


def test_vmap_over_keys_and_parameters_equals_loop():
    keys = tr.split(tr.PRNGKey(8), 3)
    a = np.array([0.4, 1.0, 3.0])
    out = tg.vmap(_samplers)(keys, a)
    for i in range(3):
        for got, want in zip(out, _samplers(keys[i], a[i])):
            np.testing.assert_allclose(got[i], want, rtol=1e-13)
    same_key = tg.vmap(_samplers, in_axes=(None, 0))(keys[0], a)
    for i in range(3):
        for got, want in zip(same_key, _samplers(keys[0], a[i])):
            np.testing.assert_allclose(got[i], want, rtol=1e-13)


def test_jit_equals_eager():
    key = tr.PRNGKey(9)
    eager = _samplers(key, 1.7)
    jitted = tg.jit(_samplers)(key, 1.7)
    for got, want in zip(jitted, eager):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-13)


def test_errors_and_helpers():
    with pytest.raises(TypeError, match=r"gamma: argument 'key'"):
        tr.gamma(np.zeros(2), 1.0)
    with pytest.raises(TypeError, match=r"beta: argument 'dtype'"):
        tr.beta(tr.PRNGKey(0), 1.0, 1.0, dtype=np.int32)
    with pytest.raises(ValueError, match=r"gamma: argument 'shape'"):
        tr.gamma(tr.PRNGKey(0), np.ones(3), (2,))
    with pytest.raises(ValueError, match="dirichlet"):
        tr.dirichlet(tr.PRNGKey(0), 1.0)
    assert tr.key_impl(tr.PRNGKey(0)) == "threefry2x32"
    assert tr.key_dtype() == tr.key(0).dtype != np.uint32   # (typed keys: key<fry>)
    assert np.array_equal(tr.clone(tr.PRNGKey(3)), tr.PRNGKey(3))
    assert tr.gamma(tr.PRNGKey(0), np.ones((0, 2))).shape == (0, 2)
