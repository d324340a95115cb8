import { isRecord } from '../common.ts';
import { WEB_SEARCH_NAME, type ToolChoice, type ToolPlan } from '../responses-tools.ts';

// A Responses request's tool plan (responses-tools.ts) in the Messages API's spelling: tools with an
// `input_schema`, Anthropic's server web search tool for OpenAI's, and the tool choice.

type Json = Record<string, unknown>;

/** Anthropic's server web search tool, the version its reference documents. */
export const WEB_SEARCH_TOOL_TYPE = 'web_search_20250305';

/**
 * OpenAI's web search options that Anthropic's tool also has: `filters.allowed_domains` and an approximate
 * `user_location`. `search_context_size` and `external_web_access` have no counterpart and are dropped.
 */
export function webSearchTool(tool: Json): Json {
  const out: Json = { type: WEB_SEARCH_TOOL_TYPE, name: WEB_SEARCH_NAME };
  const filters = isRecord(tool.filters) ? tool.filters : {};
  const domains = Array.isArray(filters.allowed_domains)
    ? filters.allowed_domains.filter((d): d is string => typeof d === 'string' && d !== '')
    : [];
  if (domains.length > 0) out.allowed_domains = domains;
  if (isRecord(tool.user_location)) {
    const location: Json = { type: 'approximate' };
    for (const key of ['city', 'region', 'country', 'timezone'])
      if (typeof tool.user_location[key] === 'string' && tool.user_location[key] !== '')
        location[key] = tool.user_location[key];
    if (Object.keys(location).length > 1) out.user_location = location;
  }
  return out;
}

/** The plan's tools as Messages tools: `input_schema` is the parameters, an empty object schema without. */
export function messagesTools(plan: ToolPlan): Json[] {
  const tools: Json[] = plan.tools.map((tool) => {
    const out: Json = { name: tool.name };
    if (tool.description !== undefined) out.description = tool.description;
    out.input_schema = isRecord(tool.parameters) ? tool.parameters : { type: 'object', properties: {} };
    return out;
  });
  if (plan.webSearch !== null) tools.push(webSearchTool(plan.webSearch));
  return tools;
}

/** The neutral choice in Messages' shape. */
export function messagesToolChoice(choice: ToolChoice): Json | undefined {
  if (choice === undefined) return undefined;
  if (choice === 'auto') return { type: 'auto' };
  if (choice === 'required') return { type: 'any' };
  if (choice === 'none') return { type: 'none' };
  return { type: 'tool', name: choice.name };
}
