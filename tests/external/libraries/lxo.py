"""Cases of lineax 0.1.1 and optimistix 0.1.0 for run.py (the same calls under JAX and tangentia)."""
import lineax as lx, optimistix as optx, equinox as eqx, optax
_A = jnp.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
_b = jnp.array([1.0, -1.0, 0.5])
_psd = lx.MatrixLinearOperator(_A, lx.positive_semidefinite_tag)
_op = lx.MatrixLinearOperator(_A)
for _n, _s in dict(LU=lx.LU(), QR=lx.QR(), SVD=lx.SVD(), Cholesky=lx.Cholesky(), CG=lx.CG(rtol=1e-10, atol=1e-10),
                   NormalCG=lx.NormalCG(rtol=1e-10, atol=1e-10), GMRES=lx.GMRES(rtol=1e-10, atol=1e-10),
                   BiCGStab=lx.BiCGStab(rtol=1e-10, atol=1e-10), AutoLinearSolver=lx.AutoLinearSolver(well_posed=True),
                   Diagonal=None, Triangular=None).items():
    if _s is None: continue
    _o = _psd if _n in ("Cholesky", "CG") else _op
    case(f"lx.solve[{_n}]")(lambda s=_s, o=_o: lx.linear_solve(o, _b, s).value)
    case(f"lx.jit_solve[{_n}]")(lambda s=_s, o=_o: jax.jit(lambda A, b: lx.linear_solve(lx.MatrixLinearOperator(A, o.tags), b, s).value)(_A, _b))
    case(f"lx.grad[{_n}]")(lambda s=_s, o=_o: jax.grad(lambda A: lx.linear_solve(lx.MatrixLinearOperator(A, o.tags), _b, s).value.sum())(_A))
    case(f"lx.vmap[{_n}]")(lambda s=_s, o=_o: jax.vmap(lambda b: lx.linear_solve(o, b, s).value)(jnp.stack([_b, 2 * _b])))
case("lx.diagonal")(lambda: lx.linear_solve(lx.DiagonalLinearOperator(jnp.array([1.0, 2.0, 4.0])), _b, lx.Diagonal()).value)
case("lx.triangular")(lambda: lx.linear_solve(lx.MatrixLinearOperator(jnp.tril(_A), lx.lower_triangular_tag), _b, lx.Triangular()).value)
case("lx.tridiagonal")(lambda: lx.linear_solve(lx.TridiagonalLinearOperator(jnp.diag(_A), jnp.diag(_A, -1), jnp.diag(_A, 1)), _b, lx.Tridiagonal()).value)
case("lx.lstsq")(lambda: lx.linear_solve(lx.MatrixLinearOperator(_A[:, :2]), _b, lx.AutoLinearSolver(well_posed=None)).value)
case("lx.jacobian_op")(lambda: lx.linear_solve(lx.JacobianLinearOperator(lambda x, a: _A @ x + x ** 3, _b), _b).value)
case("lx.op_algebra")(lambda: ((_op + _op) @ lx.IdentityLinearOperator(jax.ShapeDtypeStruct((3,), jnp.float64))).as_matrix())
case("lx.op_transpose_mv")(lambda: (_op.T.mv(_b), _op.transpose().as_matrix()))
case("lx.pytree_op")(lambda: lx.linear_solve(lx.PyTreeLinearOperator({"a": {"a": 2.0, "b": 0.5}, "b": {"a": 0.1, "b": 3.0}}, {"a": jax.ShapeDtypeStruct((), jnp.float64), "b": jax.ShapeDtypeStruct((), jnp.float64)}), {"a": 1.0, "b": 2.0}).value)
def _rosen(y, args): return jnp.sum(100 * (y[1:] - y[:-1] ** 2) ** 2 + (1 - y[:-1]) ** 2)
_y0 = jnp.array([-1.2, 1.0, 0.5])
for _n, _s in dict(BFGS=optx.BFGS(rtol=1e-8, atol=1e-8), NonlinearCG=optx.NonlinearCG(rtol=1e-8, atol=1e-8),
                   GradientDescent=optx.GradientDescent(learning_rate=1e-3, rtol=1e-8, atol=1e-8),
                   NelderMead=optx.NelderMead(rtol=1e-8, atol=1e-8),
                   Optax=optx.OptaxMinimiser(optax.adam(1e-2), rtol=1e-8, atol=1e-8),
                   DFP=optx.DFP(rtol=1e-8, atol=1e-8)).items():
    case(f"optx.minimise[{_n}]")(lambda s=_s: optx.minimise(_rosen, s, _y0, max_steps=20000, throw=False).value)
def _resid(y, a): return jnp.array([y[0] ** 2 + y[1] - a, y[0] - y[1] ** 3])
for _n, _s in dict(Newton=optx.Newton(rtol=1e-10, atol=1e-10), Chord=optx.Chord(rtol=1e-10, atol=1e-10),
                   Dogleg=optx.Dogleg(rtol=1e-10, atol=1e-10), GaussNewton=optx.GaussNewton(rtol=1e-10, atol=1e-10),
                   LM=optx.LevenbergMarquardt(rtol=1e-10, atol=1e-10), IndirectLM=optx.IndirectLevenbergMarquardt(rtol=1e-10, atol=1e-10)).items():
    case(f"optx.root[{_n}]")(lambda s=_s: optx.root_find(_resid, s, jnp.array([1.0, 1.0]), args=2.0, throw=False).value)
    case(f"optx.root_grad[{_n}]")(lambda s=_s: jax.grad(lambda a: optx.root_find(_resid, s, jnp.array([1.0, 1.0]), args=a).value.sum())(2.0))
case("optx.least_squares[LM]")(lambda: optx.least_squares(lambda y, a: y ** 2 - a, optx.LevenbergMarquardt(1e-10, 1e-10), jnp.ones(3), args=jnp.array([1.0, 4.0, 9.0])).value)
case("optx.fixed_point")(lambda: optx.fixed_point(lambda y, a: jnp.cos(y) * a, optx.FixedPointIteration(1e-10, 1e-10), jnp.array(0.5), args=1.0).value)
case("optx.fixed_point_grad")(lambda: jax.grad(lambda a: optx.fixed_point(lambda y, a: jnp.cos(y) * a, optx.FixedPointIteration(1e-10, 1e-10), jnp.array(0.5), args=a).value)(1.0))
case("optx.bisection")(lambda: optx.root_find(lambda y, a: y ** 3 - a, optx.Bisection(1e-10, 1e-10), jnp.array(1.0), args=2.0, options=dict(lower=0.0, upper=3.0)).value)
case("optx.vmap_newton")(lambda: jax.vmap(lambda a: optx.root_find(lambda y, a: y ** 3 - a, optx.Newton(1e-10, 1e-10), jnp.array(1.0), args=a).value)(jnp.array([2.0, 3.0, 8.0])))
case("optx.jit_bfgs")(lambda: jax.jit(lambda y: optx.minimise(_rosen, optx.BFGS(1e-8, 1e-8), y, max_steps=2000).value)(_y0))
case("optx.minimise_grad_args")(lambda: jax.grad(lambda c: optx.minimise(lambda y, c: jnp.sum((y - c) ** 2) + jnp.sum(y ** 4), optx.BFGS(1e-10, 1e-10), jnp.zeros(2), args=c).value.sum())(jnp.array([1.0, 2.0])))
case("optx.throw")(lambda: optx.root_find(lambda y, a: y ** 2 + 1.0, optx.Newton(1e-10, 1e-10), jnp.array(1.0), max_steps=5, throw=False).result._value)
