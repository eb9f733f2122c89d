# ember: `make demo` runs the main job, `make test` the whole suite; both install what they need first.
PY ?= python3
PIP := $(PY) -m pip
STAMP := .make-installed
comma := ,
# oneMKL's sgemm (the `mkl` extra) where its wheels exist: ember's float32 products run 20-30% faster
# on it than on numpy's OpenBLAS (docs/engine.md, "gemm"; EMBER_GEMM=openblas at run time turns it off)
EXTRAS := test,dist,demo,image$(if $(filter x86_64,$(shell uname -m)),$(comma)mkl)
CC ?= gcc
CFLAGS_NATIVE := -std=c11 -O1 -g -Wall -Wextra -Werror -pthread -Inative

.PHONY: install demo demo-module engine-demo test test-python memcheck bench clean

$(STAMP): setup.cfg setup.py pyproject.toml native/engine.c native/engine.h native/collectives.c native/collectives.h \
          native/host_copy.c native/host_copy.h native/ufunc_loops.c native/ufunc_loops.h native/image_kernels.c native/image_kernels.h native/update_kernels.c native/update_kernels.h native/act_kernels.c native/act_kernels.h native/pool_kernels.c native/pool_kernels.h native/conv_kernels.c native/conv_kernels.h native/norm_kernels.c native/norm_kernels.h native/gemm.c native/gemm.h native/lstm_kernels.c native/lstm_kernels.h native/softmax_kernels.c native/softmax_kernels.h native/thread_pool.c native/thread_pool.h native/fast_math.h native/engine_bench.c native/engine_bench.h native/build_engine.py
	$(PIP) install -q -e '.[$(EXTRAS)]'
	@touch $(STAMP)

install: $(STAMP)

demo: install
	$(PY) examples/train_digits_gluon.py

demo-module: install
	$(PY) examples/train_digits.py

engine-demo: install
	$(PY) examples/engine_demo.py

test: install memcheck test-python

test-python: install
	$(PY) -m pytest -q tests

# The C core's stress tests (the engine; the collective queue over a fake MPI; the CPU thread team;
# the image, update, activation, pool, conv, norm, LSTM and softmax kernels, linked with the team and the
# GEMM table, which the LSTM test fills with a plain loop) under
# AddressSanitizer + UndefinedBehaviorSanitizer (leaks included), then under valgrind memcheck
# when valgrind is installed.
ASAN := -fsanitize=address,undefined -fno-omit-frame-pointer
KERNEL_TESTS := image update act pool conv norm lstm softmax  # native/<name>_kernels.c and its _test.c
VALGRIND := valgrind --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite,indirect -q
memcheck:
	@mkdir -p build
	$(CC) $(CFLAGS_NATIVE) $(ASAN) native/engine.c native/host_copy.c native/stress_test.c -o build/stress_asan
	ASAN_OPTIONS=detect_leaks=1 ./build/stress_asan 20000
	$(CC) $(CFLAGS_NATIVE) $(ASAN) native/engine.c native/collectives.c native/collectives_test.c \
	    -o build/collectives_asan
	ASAN_OPTIONS=detect_leaks=1 ./build/collectives_asan 3000
	@for k in $(KERNEL_TESTS); do \
	    echo "$(CC) $(CFLAGS_NATIVE) $(ASAN) native/$${k}_kernels.c native/thread_pool.c native/gemm.c native/$${k}_kernels_test.c -lm"; \
	    $(CC) $(CFLAGS_NATIVE) $(ASAN) native/$${k}_kernels.c native/thread_pool.c native/gemm.c native/$${k}_kernels_test.c -lm \
	        -o build/$${k}_kernels_asan \
	        && ./build/$${k}_kernels_asan || exit 1; \
	done
	$(CC) $(CFLAGS_NATIVE) $(ASAN) native/thread_pool.c native/thread_pool_test.c -o build/thread_pool_asan
	ASAN_OPTIONS=detect_leaks=1 ./build/thread_pool_asan 2000
	$(CC) $(CFLAGS_NATIVE) native/engine.c native/host_copy.c native/stress_test.c -o build/stress_plain
	$(CC) $(CFLAGS_NATIVE) native/engine.c native/collectives.c native/collectives_test.c -o build/collectives_plain
	$(CC) $(CFLAGS_NATIVE) native/thread_pool.c native/thread_pool_test.c -o build/thread_pool_plain
	@if command -v valgrind >/dev/null; then \
	    $(VALGRIND) ./build/stress_plain 3000 && $(VALGRIND) ./build/collectives_plain 500 \
	        && $(VALGRIND) ./build/thread_pool_plain 200; \
	else echo "valgrind not installed: ASan run only"; fi

bench: install
	$(PY) bench/engine_overhead.py
	$(PY) bench/engine_parallel.py
	$(PY) bench/engine_pending.py
	$(PY) bench/engine_breakdown.py
	$(PY) bench/tiny_ops.py --all

clean:
	rm -rf build $(STAMP) ember/engine/_native*.so *.egg-info
