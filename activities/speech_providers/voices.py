"""Which voice speaks an agent's language.

Agents name Azure-style voices ("en-US-JennyNeural": locale, then name). An agent whose
`language` is not the locale of its voice (the shared default voice is en-US) gets that
language's voice from the table below, so a Spanish agent is not read out by an English voice.
A provider with its own voices (OpenAI) maps the name as before.
"""

from __future__ import annotations

#: One Azure neural voice per locale, for agents whose voice speaks another language.
LOCALE_VOICES = {
    "en-US": "en-US-JennyNeural",
    "en-GB": "en-GB-SoniaNeural",
    "en-AU": "en-AU-NatashaNeural",
    "en-IN": "en-IN-NeerjaNeural",
    "es-ES": "es-ES-ElviraNeural",
    "es-MX": "es-MX-DaliaNeural",
    "es-US": "es-US-PalomaNeural",
    "fr-FR": "fr-FR-DeniseNeural",
    "fr-CA": "fr-CA-SylvieNeural",
    "de-DE": "de-DE-KatjaNeural",
    "it-IT": "it-IT-ElsaNeural",
    "pt-BR": "pt-BR-FranciscaNeural",
    "pt-PT": "pt-PT-RaquelNeural",
    "nl-NL": "nl-NL-ColetteNeural",
    "pl-PL": "pl-PL-AgnieszkaNeural",
    "ja-JP": "ja-JP-NanamiNeural",
    "ko-KR": "ko-KR-SunHiNeural",
    "zh-CN": "zh-CN-XiaoxiaoNeural",
    "hi-IN": "hi-IN-SwaraNeural",
    "ar-SA": "ar-SA-ZariyahNeural",
}
#: A bare language ("es") takes its first locale in the table.
_BY_LANGUAGE = {locale.split("-")[0]: voice for locale, voice in reversed(LOCALE_VOICES.items())}


def voice_locale(voice: str) -> str:
    """The locale an Azure-style voice name starts with ("" for other names)."""
    parts = voice.split("-")
    return "-".join(parts[:2]) if len(parts) >= 3 else ""


def voice_for(voice: str, locale: str) -> str:
    """`voice` when it speaks `locale` (or no locale is asked), else the locale's voice from
    the table; a language the table lacks keeps `voice`."""
    if not locale or not voice_locale(voice):
        return voice
    if voice_locale(voice).lower() == locale.lower():
        return voice
    if voice_locale(voice).split("-")[0].lower() == locale.split("-")[0].lower() and (
        locale not in LOCALE_VOICES
    ):
        return voice  # same language, a region the table lacks: the agent's voice will do
    return LOCALE_VOICES.get(locale) or _BY_LANGUAGE.get(locale.split("-")[0], voice)
