"""Cases of equinox 0.13.8 for run.py (the same calls under JAX and tangentia)."""
import equinox as eqx, equinox.internal as eqxi, jax.tree_util as jtu
_k = jr.PRNGKey(0)
_x = jnp.linspace(-1.0, 1.0, 4)
_img = jnp.sin(jnp.arange(2 * 6 * 6.0)).reshape(2, 6, 6)
def _params(m): return jtu.tree_leaves(eqx.filter(m, eqx.is_inexact_array))
def _g(m, *a): return _params(eqx.filter_grad(lambda m: jnp.sum(m(*a) ** 2))(m))
_layers = {
    "Linear": (lambda: eqx.nn.Linear(4, 3, key=_k), (_x,)),
    "Linear_scalar": (lambda: eqx.nn.Linear("scalar", 2, key=_k), (jnp.array(0.5),)),
    "MLP": (lambda: eqx.nn.MLP(4, 2, 8, 2, activation=jax.nn.tanh, key=_k), (_x,)),
    "Conv1d": (lambda: eqx.nn.Conv1d(2, 3, 3, padding=1, key=_k), (_img[:, 0],)),
    "Conv2d": (lambda: eqx.nn.Conv2d(2, 3, 3, stride=2, key=_k), (_img,)),
    "Conv2d_dil_groups": (lambda: eqx.nn.Conv2d(2, 4, 3, dilation=2, groups=2, padding="SAME", key=_k), (_img,)),
    "ConvTranspose2d": (lambda: eqx.nn.ConvTranspose2d(2, 3, 3, stride=2, key=_k), (_img,)),
    "MaxPool2d": (lambda: eqx.nn.MaxPool2d(2, 2), (_img,)),
    "AvgPool2d": (lambda: eqx.nn.AvgPool2d(3, 1, padding=1), (_img,)),
    "AdaptiveAvgPool2d": (lambda: eqx.nn.AdaptiveAvgPool2d((2, 3)), (_img,)),
    "LayerNorm": (lambda: eqx.nn.LayerNorm(4), (_x,)),
    "GroupNorm": (lambda: eqx.nn.GroupNorm(2, 2), (_img,)),
    "RMSNorm": (lambda: eqx.nn.RMSNorm(4), (_x,)),
    "GRUCell": (lambda: (lambda c: (lambda x: c(x, jnp.ones(5))))(eqx.nn.GRUCell(4, 5, key=_k)), (_x,)),
    "LSTMCell": (lambda: (lambda c: (lambda x: c(x, (jnp.ones(5), jnp.zeros(5)))[0]))(eqx.nn.LSTMCell(4, 5, key=_k)), (_x,)),
    "MHA": (lambda: eqx.nn.MultiheadAttention(2, 4, key=_k), (jnp.outer(jnp.arange(3.0), _x), jnp.outer(jnp.arange(3.0), _x), jnp.outer(jnp.arange(3.0), _x))),
    "Embedding": (lambda: eqx.nn.Embedding(5, 3, key=_k), (jnp.array(2),)),
    "Sequential": (lambda: eqx.nn.Sequential([eqx.nn.Linear(4, 4, key=_k), eqx.nn.Lambda(jax.nn.relu), eqx.nn.Linear(4, 1, key=_k)]), (_x,)),
    "PReLU": (lambda: eqx.nn.PReLU(), (_x,)),
    "WeightNorm": (lambda: eqx.nn.WeightNorm(eqx.nn.Linear(4, 3, key=_k)), (_x,)),
    "Identity": (lambda: eqx.nn.Identity(), (_x,)),
}
for _n, (_mk, _a) in _layers.items():
    case(f"nn[{_n}]")(lambda mk=_mk, a=_a: mk()(*a))
    case(f"nn_grad[{_n}]")(lambda mk=_mk, a=_a: _g(mk(), *a) if _params(mk()) else jnp.zeros(()))
    case(f"nn_jit_vmap[{_n}]")(lambda mk=_mk, a=_a: eqx.filter_jit(eqx.filter_vmap(lambda m, *b: m(*b), in_axes=(None,) + (0,) * len(a)))(mk(), *[jnp.stack([x, x]) for x in a]))
case("rope")(lambda: eqx.nn.RotaryPositionalEmbedding(4)(jnp.outer(jnp.arange(3.0), _x)))
case("dropout")(lambda: eqx.nn.Dropout(0.5)(jnp.ones(10), key=jr.PRNGKey(1)))
case("dropout_inference")(lambda: eqx.nn.Dropout(0.5, inference=True)(jnp.ones(3)))
def _bn():
    m, st = eqx.nn.make_with_state(eqx.nn.BatchNorm)(3, "batch")
    f = jax.vmap(m, axis_name="batch", in_axes=(0, None), out_axes=(0, None))
    y, st = f(jnp.arange(12.0).reshape(4, 3), st)
    y2, st = f(jnp.arange(12.0).reshape(4, 3) * 2, st)
    return y, y2, eqx.nn.inference_mode(m)(jnp.ones(3), st)[0]
case("batchnorm_state")(_bn)
case("spectral_norm")(lambda: (lambda m, st: m(_x, st)[0])(*eqx.nn.make_with_state(eqx.nn.SpectralNorm)(eqx.nn.Linear(4, 3, key=_k), "weight", key=_k)))
case("filter_value_and_grad_aux")(lambda: eqx.filter_value_and_grad(lambda x, y: (jnp.sum(x ** 2), y), has_aux=True)(_x, "s")[0])
case("filter_jvp")(lambda: eqx.filter_jvp(lambda x, s: (jnp.sin(x) * 2, s), (_x, "st"), (jnp.ones(4), None))[1][0])
case("filter_vjp")(lambda: eqx.filter_vjp(lambda x: jnp.sin(x) ** 2, _x)[1](jnp.ones(4)))
case("filter_hessian")(lambda: eqx.filter_hessian(lambda x: jnp.sum(x ** 3))(_x))
case("filter_jacfwd_jacrev")(lambda: (eqx.filter_jacfwd(jnp.sin)(_x), eqx.filter_jacrev(jnp.sin)(_x)))
@eqx.filter_custom_vjp
def _cvjp(vjp_arg, x):
    return vjp_arg * jnp.sin(x)
@_cvjp.def_fwd
def _cvjp_fwd(perturbed, vjp_arg, x):
    return vjp_arg * jnp.sin(x), jnp.cos(x)
@_cvjp.def_bwd
def _cvjp_bwd(res, g, perturbed, vjp_arg, x):
    return 3 * g * res * jnp.sin(x)
case("filter_custom_vjp")(lambda: jax.grad(lambda w: jnp.sum(_cvjp(w, _x)))(jnp.full(4, 2.0)))
case("filter_closure_convert")(lambda: jax.grad(lambda a: eqx.filter_closure_convert(lambda x: jnp.sin(a * x), 1.0)(2.0))(0.3))
case("filter_checkpoint_grad")(lambda: jax.grad(lambda x: jnp.sum(eqx.filter_checkpoint(lambda y: jnp.sin(y) ** 2)(x)))(_x))
case("filter_pure_callback")(lambda: eqx.filter_jit(lambda x: eqx.filter_pure_callback(lambda y: np.asarray(y) * 2, x, result_shape_dtypes=x))(_x))
case("filter_eval_shape")(lambda: jnp.array(eqx.filter_eval_shape(lambda x: jnp.outer(x, x), _x).shape))
case("filter_make_jaxpr")(lambda: jnp.array(len(eqx.filter_make_jaxpr(lambda x, s: jnp.sin(x) * 2)(_x, "s")[1])))
case("tree_at")(lambda: eqx.tree_at(lambda m: m.layers[-1].bias, eqx.nn.MLP(2, 2, 4, 1, key=_k), replace_fn=lambda b: b + 1).layers[-1].bias)
case("tree_equal")(lambda: jnp.array([eqx.tree_equal(_x, _x) is True, bool(eqx.tree_equal(_x, _x + 1e-12, rtol=1e-6, atol=1e-6))]))
case("partition_combine")(lambda: eqx.combine(*eqx.partition(eqx.nn.Linear(2, 2, key=_k), eqx.is_array)).weight)
case("error_if_ok_jit")(lambda: eqx.filter_jit(lambda x: eqx.error_if(x, x > 5, "big"))(_x))
def _raises(f):
    try:
        f(); return jnp.array(0)
    except Exception as e:
        return jnp.array(1 if "big" in str(e) else 2)
case("error_if_raises_eager")(lambda: _raises(lambda: eqx.error_if(_x, _x > 0.5, "big")))
case("error_if_raises_jit")(lambda: _raises(lambda: eqx.filter_jit(lambda x: eqx.error_if(x, x > 0.5, "big"))(_x)))
case("error_if_raises_vmap")(lambda: _raises(lambda: jax.vmap(lambda x: eqx.error_if(x, x > 0.5, "big"))(_x)))
case("branched_error_if")(lambda: _raises(lambda: eqx.filter_jit(lambda x, i: eqx.branched_error_if(x, x[0] < 0, i, ["ok", "big"]))(_x, 1)))
def _loop(kind, grad=False):
    def run(a):
        return eqxi.while_loop(lambda c: c[0] < 6, lambda c: (c[0] + 1, c[1] * a + jnp.sin(c[1])), (0, a), max_steps=10, kind=kind)[1]
    return jax.grad(run)(0.9) if grad else run(0.9)
for _kd in ("lax", "bounded", "checkpointed"):
    case(f"while_loop[{_kd}]")(lambda kd=_kd: _loop(kd))
    if _kd != "lax":
        case(f"while_loop_grad[{_kd}]")(lambda kd=_kd: _loop(kd, True))
case("while_loop_vmap_checkpointed")(lambda: jax.vmap(lambda a: eqxi.while_loop(lambda c: c[0] < a, lambda c: (c[0] + 1, c[1] * 1.1), (0.0, 1.0), max_steps=20, kind="checkpointed")[1])(jnp.array([2.0, 5.0])))
case("while_loop_buffers")(lambda: eqxi.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1].at[c[0]].set(c[0] * 2.0)), (0, jnp.zeros(5)), max_steps=6, kind="checkpointed", buffers=lambda c: c[1])[1])
case("scan_checkpointed_grad")(lambda: jax.grad(lambda a: eqxi.scan(lambda c, x: (c * a + x, c), 1.0, jnp.arange(5.0), kind="checkpointed")[0])(0.7))
case("nondifferentiable")(lambda: _raises(lambda: jax.grad(lambda x: jnp.sum(eqxi.nondifferentiable(x, msg="big")))(_x)))
case("nondifferentiable_backward")(lambda: _raises(lambda: jax.grad(lambda x: jnp.sum(eqxi.nondifferentiable_backward(x, msg="big")))(_x)))
case("stop_gradient_filter")(lambda: jax.grad(lambda x: jnp.sum(x * jax.lax.stop_gradient(x)))(_x))
case("module_method_jit")(lambda: eqx.filter_jit(eqx.nn.Linear(4, 2, key=_k).__call__)(_x))
class _M(eqx.Module):
    w: jax.Array
    n: int = eqx.field(static=True, default=2)
    def __call__(self, x): return self.w * x ** self.n
case("module_static_field")(lambda: (eqx.filter_jit(lambda m, x: m(x))(_M(jnp.array(3.0)), _x), eqx.filter_grad(lambda m: jnp.sum(m(_x)))(_M(jnp.array(3.0))).w))
case("tree_pformat")(lambda: jnp.array(len(eqx.tree_pformat(eqx.nn.MLP(2, 2, 4, 1, key=_k)))))
case("noinline")(lambda: jax.jit(lambda x: eqxi.noinline(lambda y: jnp.sin(y) * 2)(x))(_x))
case("noinline_grad")(lambda: jax.grad(lambda x: jnp.sum(eqxi.noinline(lambda y: jnp.sin(y) * 2)(x)))(_x))
case("unvmap_any")(lambda: jax.vmap(lambda x: eqxi.unvmap_any(x > 0.9))(_x))
case("enumeration")(lambda: jnp.array(eqx.filter_jit(lambda i: i == _E.b)(_E.b)))
class _E(eqx.Enumeration):
    a = "A"
    b = "B"
case("filter_shard_noop")(lambda: eqx.filter_shard(_x, jax.sharding.SingleDeviceSharding(jax.devices()[0])))
