/* The C API of an ahead-of-time model library (see aot_bundle.py).
 *
 * Compiled once per exported model, after the generated tables that define
 * TVMLAB_PREFIX and the TVMLAB_* sizes, the tables `inputs`, `outputs`,
 * `output_in_constants`, `input_offset`, `output_offset`, `kernel_names` and
 * `errors` (ending with a sentinel), and declare the entry function and the constants.  No JSON, no
 * Python: set_input and get_output are copies into and out of one workspace,
 * run is one call of the entry, which calls every kernel in order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TVMLAB_CAT2(a, b) a##_##b
#define TVMLAB_CAT(a, b) TVMLAB_CAT2(a, b)
#define TVMLAB_FN(name) TVMLAB_CAT(TVMLAB_PREFIX, name)
#define TVMLAB_STR2(x) #x
#define TVMLAB_STR(x) TVMLAB_STR2(x)

typedef TVMLAB_FN(model) model_t;

struct TVMLAB_FN(model) {
  uint8_t *workspace;
  int threads;                     /* from TVM_NUM_THREADS; 0: OpenMP's own choice (OMP_NUM_THREADS) */
  char error[512];
};

#if TVMLAB_OPENMP
int omp_get_max_threads(void);
void omp_set_num_threads(int);
#endif

static const char *create_error = "";

model_t *TVMLAB_FN(create)(void) {
  model_t *m = (model_t *)calloc(1, sizeof(model_t));
  size_t bytes = (TVMLAB_WORKSPACE_BYTES + TVMLAB_ALIGNMENT - 1) / TVMLAB_ALIGNMENT * TVMLAB_ALIGNMENT;
  if (m == NULL || (m->workspace = (uint8_t *)aligned_alloc(TVMLAB_ALIGNMENT, bytes)) == NULL) {
    free(m);
    create_error = "create: out of memory for the model's workspace (" TVMLAB_STR(TVMLAB_WORKSPACE_BYTES)
                   " bytes)";
    return NULL;
  }
  memset(m->workspace, 0, bytes);
  const char *threads = getenv("TVM_NUM_THREADS");
  m->threads = threads != NULL ? atoi(threads) : 0;
  if (m->threads < 0) m->threads = 0;
  return m;
}

void TVMLAB_FN(destroy)(model_t *m) {
  if (m != NULL) {
    free(m->workspace);
    free(m);
  }
}

const char *TVMLAB_FN(error)(const model_t *m) { return m != NULL ? m->error : create_error; }

int TVMLAB_FN(num_inputs)(void) { return TVMLAB_NUM_INPUTS; }

int TVMLAB_FN(num_outputs)(void) { return TVMLAB_NUM_OUTPUTS; }

const tvmlab_tensor_info *TVMLAB_FN(input_info)(int index) {
  return index >= 0 && index < TVMLAB_NUM_INPUTS ? &inputs[index] : NULL;
}

const tvmlab_tensor_info *TVMLAB_FN(output_info)(int index) {
  return index >= 0 && index < TVMLAB_NUM_OUTPUTS ? &outputs[index] : NULL;
}

int TVMLAB_FN(input_index)(const char *name) {
  for (int i = 0; name != NULL && i < TVMLAB_NUM_INPUTS; i++)
    if (strcmp(inputs[i].name, name) == 0) return i;
  return -1;
}

static int fail_size(model_t *m, const char *what, const tvmlab_tensor_info *t, size_t nbytes) {
  snprintf(m->error, sizeof m->error, "%s '%s' (%zu elements of %s) takes %zu bytes, got %zu", what, t->name,
           t->size, t->dtype, t->nbytes, nbytes);
  return -1;
}

int TVMLAB_FN(set_input)(model_t *m, const char *name, const void *data, size_t nbytes) {
  if (m == NULL) return -1;
  int i = TVMLAB_FN(input_index)(name);
  if (i < 0) {
    snprintf(m->error, sizeof m->error, "set_input: the model has no input '%s'; inputs: %s",
             name != NULL ? name : "(null)", TVMLAB_INPUT_NAMES);
    return -1;
  }
  if (nbytes != inputs[i].nbytes) return fail_size(m, "set_input: input", &inputs[i], nbytes);
  if (data == NULL) {
    snprintf(m->error, sizeof m->error, "set_input: input '%s': data is NULL", name);
    return -1;
  }
  memcpy(m->workspace + input_offset[i], data, nbytes);
  m->error[0] = '\0';
  return 0;
}

int TVMLAB_FN(run)(model_t *m) {
  if (m == NULL) return -1;
#if TVMLAB_OPENMP
  int before = omp_get_max_threads();
  if (m->threads > 0) omp_set_num_threads(m->threads);
#endif
  uint64_t rc = TVMLAB_FN(aot_run)(m->workspace, TVMLAB_FN(constants));
#if TVMLAB_OPENMP
  if (m->threads > 0) omp_set_num_threads(before);
#endif
  if (rc == 0) {
    m->error[0] = '\0';
    return 0;
  }
  int call = (int)(rc >> 32) - 1, code = (int)(int32_t)(uint32_t)rc;
  const char *text = "failed";
  for (size_t k = 0; k < sizeof errors / sizeof errors[0]; k++)
    if (errors[k].call == call && errors[k].code == code) text = errors[k].text;
  snprintf(m->error, sizeof m->error, "run: kernel %d (%s): %s (code %d)", call, kernel_names[call], text, code);
  return -1;
}

int TVMLAB_FN(get_output)(model_t *m, int index, void *data, size_t nbytes) {
  if (m == NULL) return -1;
  if (index < 0 || index >= TVMLAB_NUM_OUTPUTS) {
    snprintf(m->error, sizeof m->error, "get_output: output index %d is out of range: the model has %d outputs",
             index, TVMLAB_NUM_OUTPUTS);
    return -1;
  }
  if (nbytes != outputs[index].nbytes) return fail_size(m, "get_output: output", &outputs[index], nbytes);
  if (data == NULL) {
    snprintf(m->error, sizeof m->error, "get_output: output %d: data is NULL", index);
    return -1;
  }
  const uint8_t *base = output_in_constants[index] ? TVMLAB_FN(constants) : m->workspace;
  memcpy(data, base + output_offset[index], nbytes);
  m->error[0] = '\0';
  return 0;
}
