"""``jax._src.interpreters.mlir`` placeholder: tangentia does not lower to MLIR.  Test files
import it at the top; a test that uses it fails with this module's AttributeError."""
