"""The BLAS thread budget of numpy's OpenBLAS: left at the library default unless EMBER_BLAS_THREADS says
otherwise.  (oneMKL, when installed for the native kernels, runs its sequential layer: one thread a call.)"""
import pytest

pytest.importorskip("threadpoolctl")

CODE = """
import ember
from threadpoolctl import threadpool_info
print(sorted({i['num_threads'] for i in threadpool_info() if i['internal_api'] == 'openblas'}))
"""
CLEAR = {"EMBER_BLAS_THREADS": "", "OMP_NUM_THREADS": "", "OPENBLAS_NUM_THREADS": "", "MKL_NUM_THREADS": ""}


def test_knob_pins_blas(run_python):
    r = run_python(CODE, env={**CLEAR, "EMBER_CPU_WORKER_NTHREADS": "2", "EMBER_BLAS_THREADS": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[1]"


def test_user_choice_is_respected(run_python):
    r = run_python(CODE, env={**CLEAR, "EMBER_CPU_WORKER_NTHREADS": "2", "EMBER_BLAS_THREADS": "3"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[3]"


def test_bad_value_is_a_clear_error(run_python):
    r = run_python(CODE, env={**CLEAR, "EMBER_BLAS_THREADS": "many"})
    assert r.returncode != 0 and "EMBER_BLAS_THREADS" in r.stderr
