"""Cases of flax 0.12.8 (linen) with optax for run.py (the same calls under JAX and tangentia)."""
import flax.linen as nn, optax
_k = jax.random.PRNGKey(0)
_x = jax.random.normal(jax.random.PRNGKey(1), (4, 6))
_img = jax.random.normal(jax.random.PRNGKey(2), (2, 8, 8, 3))
_seq = jax.random.normal(jax.random.PRNGKey(3), (2, 5, 6))
def _layer(name, mod, x, **kw):
    def run():
        v = mod.init(_k, x, **kw)
        return v, mod.apply(v, x, **kw)
    case(name)(run)
_layer("Dense", nn.Dense(3), _x)
_layer("DenseGeneral", nn.DenseGeneral((2, 3)), _x)
_layer("Conv", nn.Conv(4, (3, 3)), _img)
_layer("ConvStrided", nn.Conv(4, (3, 3), strides=2, padding="VALID"), _img)
_layer("ConvTranspose", nn.ConvTranspose(2, (3, 3)), _img)
_layer("Embed", nn.Embed(10, 4), jnp.array([1, 2, 9]))
_layer("LayerNorm", nn.LayerNorm(), _x)
_layer("RMSNorm", nn.RMSNorm(), _x)
_layer("GroupNorm", nn.GroupNorm(num_groups=3), _x)
_layer("BatchNorm_eval", nn.BatchNorm(use_running_average=True), _x)
def _bn():
    m = nn.BatchNorm(use_running_average=False)
    v = m.init(_k, _x)
    return m.apply(v, _x, mutable=["batch_stats"])
case("BatchNorm_train")(_bn)
_layer("Dropout_det", nn.Dropout(0.5, deterministic=True), _x)
case("Dropout_rng")(lambda: nn.Dropout(0.5).apply({}, _x, deterministic=False, rngs={"dropout": _k}))
_layer("MHA", nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=4), _seq)
_layer("SelfAttention_mask", nn.SelfAttention(num_heads=2, qkv_features=4), _seq, mask=nn.make_causal_mask(jnp.ones((2, 5))))
case("LSTMCell_RNN")(lambda: (lambda m: (lambda v: m.apply(v, _seq))(m.init(_k, _seq)))(nn.RNN(nn.LSTMCell(3))))
_seq32 = _seq.astype(jnp.float32)
case("LSTMCell_RNN32")(lambda: (lambda m: (lambda v: m.apply(v, _seq32))(m.init(_k, _seq32)))(nn.RNN(nn.LSTMCell(3))))
case("GRUCell_RNN32")(lambda: (lambda m: (lambda v: m.apply(v, _seq32))(m.init(_k, _seq32)))(nn.RNN(nn.GRUCell(3))))
case("OptimizedLSTM32")(lambda: (lambda m: (lambda v: m.apply(v, _seq32))(m.init(_k, _seq32)))(nn.RNN(nn.OptimizedLSTMCell(3))))
case("GRUCell_RNN")(lambda: (lambda m: (lambda v: m.apply(v, _seq))(m.init(_k, _seq)))(nn.RNN(nn.GRUCell(3))))
case("pooling")(lambda: (nn.max_pool(_img, (2, 2), strides=(2, 2)), nn.avg_pool(_img, (2, 2)), nn.avg_pool(_img, (3, 3), padding="SAME")))
case("activations")(lambda: [f(_x) for f in (nn.relu, nn.gelu, nn.silu, nn.softplus, nn.sigmoid, nn.tanh, nn.elu, nn.leaky_relu, nn.log_softmax, nn.softmax, nn.swish, nn.celu, nn.selu, nn.glu)])
class _MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(8)(x))
        return nn.Dense(1)(x)
_layer("compact_MLP", _MLP(), _x)
class _Setup(nn.Module):
    def setup(self):
        self.l1 = nn.Dense(5); self.l2 = nn.Dense(2)
    def __call__(self, x):
        return self.l2(nn.tanh(self.l1(x)))
_layer("setup_module", _Setup(), _x)
class _Seq(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Sequential([nn.Dense(4), nn.relu, nn.Dense(2)])(x)
_layer("Sequential", _Seq(), _x)
def _train(jit):
    m = _MLP(); y = jnp.sum(_x, axis=1, keepdims=True)
    params = m.init(_k, _x)
    tx = optax.adam(1e-2); st = tx.init(params)
    def loss(p): return jnp.mean((m.apply(p, _x) - y) ** 2)
    def step(p, s):
        l, g = jax.value_and_grad(loss)(p)
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s, l
    if jit: step = jax.jit(step)
    ls = []
    for _ in range(5):
        params, st, l = step(params, st); ls.append(l)
    return params, jnp.array(ls)
case("train_step_eager")(lambda: _train(False))
case("train_step_jit")(lambda: _train(True))
class _Scan(nn.Module):
    @nn.compact
    def __call__(self, c, xs):
        cell = nn.scan(nn.GRUCell, variable_broadcast="params", split_rngs={"params": False}, in_axes=1, out_axes=1)(4)
        return cell(c, xs)
def _scan():
    m = _Scan(); c = jnp.zeros((2, 4))
    v = m.init(_k, c, _seq)
    return v, m.apply(v, c, _seq)
case("nn.scan")(_scan)
class _Remat(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.remat(nn.Dense)(3)(x)
_layer("nn.remat", _Remat(), _x)
class _Vmap(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.vmap(nn.Dense, variable_axes={"params": 0}, split_rngs={"params": True}, in_axes=0)(2)(x)
_layer("nn.vmap", _Vmap(), _x)
case("lazy_init")(lambda: _MLP().lazy_init(_k, jax.ShapeDtypeStruct((4, 6), jnp.float64)))
case("grad_wrt_input")(lambda: (lambda v: jax.grad(lambda x: jnp.sum(_MLP().apply(v, x)))(_x))(_MLP().init(_k, _x)))
case("tabulate_len")(lambda: jnp.array(len(_MLP().tabulate(_k, _x).splitlines()) > 5))
case("param_count")(lambda: jnp.array(sum(l.size for l in jax.tree_util.tree_leaves(_MLP().init(_k, _x)))))
