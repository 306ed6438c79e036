"""What several formats share about their chat templates: tool prompts for replies without a
chat template (the pieces every format's prompt uses, Qwen's ``# Tools`` and Mistral's
``[AVAILABLE_TOOLS]`` sections; each depends on the tool list only) and the control markers of
the templates that several formats are written in (ChatML with Qwen's tool tags, Llama 3,
Llama 4, LFM2, Cohere, DeepSeek, GigaChat 3, Mistral v11)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

__all__ = [
    "CHATML_TOOLS",
    "COHERE_ACTION",
    "COHERE_TURN",
    "DEEPSEEK",
    "DEEPSEEK_CALL",
    "GIGACHAT3",
    "LFM2",
    "LLAMA3",
    "LLAMA4",
    "MISTRAL_V11",
    "QWEN_TOOL_TAGS",
    "available_tools",
    "qwen_tools",
    "tool_json_lines",
    "tools_prompt",
]

#: Qwen's tool tags (also in Falcon 3's template)
QWEN_TOOL_TAGS = (
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<tools>",
    "</tools>",
)

#: ChatML with Qwen's tool tags (Qwen 2.5 / 3, Hermes, SmolLM)
CHATML_TOOLS = (
    "<|im_start|>",
    "<|im_end|>",
    "<|endoftext|>",
    *QWEN_TOOL_TAGS,
    "<think>",
    "</think>",
)

#: Llama 3.x
LLAMA3 = (
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|python_tag|>",
    "<|finetune_right_pad_id|>",
)

#: Llama 4 (its own template, vLLM's JSON and pythonic ones)
LLAMA4 = (
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|header_start|>",
    "<|header_end|>",
    "<|eot|>",
    "<|eom|>",
    "<|python_start|>",
    "<|python_end|>",
)

#: Liquid LFM2 / LFM2.5 (ChatML with its tool-list, call and response markers)
LFM2 = (
    "<|startoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|tool_list_start|>",
    "<|tool_list_end|>",
    "<|tool_call_start|>",
    "<|tool_call_end|>",
    "<|tool_response_start|>",
    "<|tool_response_end|>",
    "<think>",
    "</think>",
)

#: Cohere's turns, and its thinking and action markers (Command R7B, Cohere2)
COHERE_TURN = (
    "<BOS_TOKEN>",
    "<|START_OF_TURN_TOKEN|>",
    "<|END_OF_TURN_TOKEN|>",
    "<|SYSTEM_TOKEN|>",
    "<|USER_TOKEN|>",
    "<|CHATBOT_TOKEN|>",
)
COHERE_ACTION = (
    "<|START_THINKING|>",
    "<|END_THINKING|>",
    "<|START_ACTION|>",
    "<|END_ACTION|>",
    "<|START_TOOL_RESULT|>",
    "<|END_TOOL_RESULT|>",
)

#: DeepSeek V3 / R1 / V3.1's call markers: calls begin, calls end, call begin, call end, sep
DEEPSEEK_CALL = (
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁calls▁end｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁call▁end｜>",
    "<｜tool▁sep｜>",
)
#: DeepSeek's template markers (V3 to V4.1)
DEEPSEEK = (
    "<｜begin▁of▁sentence｜>",
    "<｜end▁of▁sentence｜>",
    "<｜User｜>",
    "<｜Assistant｜>",
    *DEEPSEEK_CALL,
    "<｜tool▁outputs▁begin｜>",
    "<｜tool▁outputs▁end｜>",
    "<｜tool▁output▁begin｜>",
    "<｜tool▁output▁end｜>",
    "<think>",
    "</think>",
)

#: GigaChat 3 / 3.1
GIGACHAT3 = ("<|message_sep|>", "<|role_sep|>", "<|function_call|>")

#: Mistral tokenizers v11+ (Mistral Small 3.2, Magistral, Ministral 3, Devstral 2)
MISTRAL_V11 = (
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[CALL_ID]",
    "[THINK]",
    "[/THINK]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
)


class _Tool(Protocol):
    def to_openai(self) -> dict[str, Any]: ...


def tool_json_lines(tools: Sequence[_Tool]) -> str:
    """One ``{"type": "function", "function": ...}`` JSON object per line."""
    return "\n".join(json.dumps(t.to_openai(), ensure_ascii=False) for t in tools)


def tools_prompt(tools_json: str, how: str) -> str:
    """A template-less tool prompt: the tool list and how this format writes a call."""
    return (
        "# Tools\n\nYou may call one or more functions to assist with the user query. "
        "The functions, as JSON:\n" + tools_json + "\n\nTo call a function, write:\n" + how
    )


def qwen_tools(tools: Sequence[_Tool]) -> str:
    """The ``# Tools`` system-prompt section of the Qwen 2.5 / Qwen 3 chat template."""
    return (
        "# Tools\n\n"
        "You may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n"
        "<tools>\n" + tool_json_lines(tools) + "\n</tools>\n\n"
        "For each function call, return a json object with function name and arguments "
        "within <tool_call></tool_call> XML tags:\n"
        "<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n'
        "</tool_call>"
    )


def available_tools(tools: Sequence[_Tool]) -> str:
    """The ``[AVAILABLE_TOOLS]`` section the Mistral templates put before the last user turn."""
    body = json.dumps([t.to_openai() for t in tools], ensure_ascii=False)
    return "[AVAILABLE_TOOLS]" + body + "[/AVAILABLE_TOOLS]"
