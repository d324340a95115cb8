// Facts about GGUF files from ggml (ggml.h `ggml_type`, ggml.c `type_traits`) and llama.cpp
// (`llama_ftype`, `LLM_ARCH_NAMES`), so a header can be judged without loading llama.cpp.

/** ggml tensor type -> [elements per block, bytes per block, name]. */
export const GGML_TYPES: ReadonlyMap<number, readonly [number, number, string]> = new Map([
  [0, [1, 4, 'F32']],
  [1, [1, 2, 'F16']],
  [2, [32, 18, 'Q4_0']],
  [3, [32, 20, 'Q4_1']],
  [6, [32, 22, 'Q5_0']],
  [7, [32, 24, 'Q5_1']],
  [8, [32, 34, 'Q8_0']],
  [9, [32, 36, 'Q8_1']],
  [10, [256, 84, 'Q2_K']],
  [11, [256, 110, 'Q3_K']],
  [12, [256, 144, 'Q4_K']],
  [13, [256, 176, 'Q5_K']],
  [14, [256, 210, 'Q6_K']],
  [15, [256, 292, 'Q8_K']],
  [16, [256, 66, 'IQ2_XXS']],
  [17, [256, 74, 'IQ2_XS']],
  [18, [256, 98, 'IQ3_XXS']],
  [19, [256, 50, 'IQ1_S']],
  [20, [32, 18, 'IQ4_NL']],
  [21, [256, 110, 'IQ3_S']],
  [22, [256, 82, 'IQ2_S']],
  [23, [256, 136, 'IQ4_XS']],
  [24, [1, 1, 'I8']],
  [25, [1, 2, 'I16']],
  [26, [1, 4, 'I32']],
  [27, [1, 8, 'I64']],
  [28, [1, 8, 'F64']],
  [29, [256, 56, 'IQ1_M']],
  [30, [1, 2, 'BF16']],
  [34, [256, 54, 'TQ1_0']],
  [35, [256, 66, 'TQ2_0']],
  [39, [32, 17, 'MXFP4']],
] as const);

/** `general.file_type` (llama_ftype) -> the quantization name people use for the file. */
export const FILE_TYPES: ReadonlyMap<number, string> = new Map([
  [0, 'F32'], [1, 'F16'], [2, 'Q4_0'], [3, 'Q4_1'], [7, 'Q8_0'], [8, 'Q5_0'], [9, 'Q5_1'], [10, 'Q2_K'],
  [11, 'Q3_K_S'], [12, 'Q3_K_M'], [13, 'Q3_K_L'], [14, 'Q4_K_S'], [15, 'Q4_K_M'], [16, 'Q5_K_S'], [17, 'Q5_K_M'],
  [18, 'Q6_K'], [19, 'IQ2_XXS'], [20, 'IQ2_XS'], [21, 'Q2_K_S'], [22, 'IQ3_XS'], [23, 'IQ3_XXS'], [24, 'IQ1_S'],
  [25, 'IQ4_NL'], [26, 'IQ3_S'], [27, 'IQ3_M'], [28, 'IQ2_S'], [29, 'IQ2_M'], [30, 'IQ4_XS'], [31, 'IQ1_M'],
  [32, 'BF16'], [36, 'TQ1_0'], [37, 'TQ2_0'], [38, 'MXFP4_MOE'],
]);

/** Architectures the bundled llama.cpp knows; anything else cannot load. */
export const ARCHITECTURES: ReadonlySet<string> = new Set([
  'llama', 'llama4', 'deci', 'falcon', 'falcon-h1', 'grok', 'gpt2', 'gptj', 'gptneox', 'mpt', 'baichuan',
  'starcoder', 'starcoder2', 'refact', 'bert', 'modern-bert', 'nomic-bert', 'nomic-bert-moe', 'neo-bert',
  'jina-bert-v2', 'bloom', 'stablelm', 'qwen', 'qwen2', 'qwen2moe', 'qwen2vl', 'qwen3', 'qwen3moe', 'phi2',
  'phi3', 'phimoe', 'plamo', 'plamo2', 'codeshell', 'orion', 'internlm2', 'minicpm', 'minicpm3', 'gemma',
  'gemma2', 'gemma3', 'gemma3n', 'gemma-embedding', 'mamba', 'mamba2', 'jamba', 'xverse', 'command-r',
  'cohere2', 'dbrx', 'olmo', 'olmo2', 'olmoe', 'openelm', 'arctic', 'deepseek', 'deepseek2', 'chatglm', 'glm4',
  'glm4moe', 'bitnet', 't5', 't5encoder', 'jais', 'nemotron', 'nemotron_h', 'exaone', 'exaone4', 'rwkv6',
  'rwkv6qwen2', 'rwkv7', 'arwkv7', 'granite', 'granitemoe', 'granitehybrid', 'chameleon', 'plm', 'bailingmoe',
  'dots1', 'arcee', 'ernie4_5', 'ernie4_5-moe', 'hunyuan-moe', 'hunyuan-dense', 'smollm3', 'gpt-oss', 'lfm2',
  'seed_oss', 'apertus', 'mistral3', 'smallthinker', 'llada', 'dream', 'wavtokenizer-dec',
]);
