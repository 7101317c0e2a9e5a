"""Chat-model providers for the LLM activity: the offline policy, OpenAI and Azure OpenAI.

`chat_model_from_env()` (in `factory`) picks one from `BATON_CHAT_PROVIDER`. The OpenAI provider
lives in `activities.chat_models.openai_chat` and is imported only when selected, so the offline
path never loads the OpenAI SDK.
"""

from activities.chat_models.base import ChatModel, ChatModelError, chat_model_name
from activities.chat_models.factory import chat_model_from_env
from activities.chat_models.offline.policy import OfflineChatModel
from activities.provider_errors import is_retryable_status

__all__ = [
    "ChatModel",
    "ChatModelError",
    "OfflineChatModel",
    "chat_model_from_env",
    "chat_model_name",
    "is_retryable_status",
]
