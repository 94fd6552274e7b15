//! The vision model's and the speech backend's resolution from Hermes' keys and variables.

use super::*;
use secrecy::ExposeSecret;

fn chain(env: &Env) -> ModelChain {
    let yaml = "model: {provider: openai, base_url: 'http://127.0.0.1:1/v1', default: main-m}";
    let (s, _) = crate::config::parse_yaml(yaml, "config.yaml").unwrap();
    crate::config::models::resolve(&s, env, "config.yaml", &mut Vec::new()).unwrap()
}

#[test]
fn the_vision_model_is_the_aux_endpoint_then_the_main_model_with_vision() {
    let env = Env::from_pairs([("OPENAI_API_KEY", "ko"), ("VISION_KEY", "kv")]);
    let c = chain(&env);
    // auto without vision: no model, the tool is not offered.
    assert!(vision_endpoint(&AuxTask::default(), &c, false, &env).unwrap().is_none());
    // auto with vision: the main model.
    let ep = vision_endpoint(&AuxTask::default(), &c, true, &env).unwrap().unwrap();
    assert_eq!((ep.base_url.as_str(), ep.model.as_str()), ("http://127.0.0.1:1/v1", "main-m"));
    // A direct endpoint: its model and key_env, else OPENAI_API_KEY.
    let aux =
        AuxTask { base_url: "http://127.0.0.1:2/v1/".into(), model: "vis".into(), key_env: "VISION_KEY".into(), ..AuxTask::default() };
    let ep = vision_endpoint(&aux, &c, false, &env).unwrap().unwrap();
    assert_eq!((ep.base_url.as_str(), ep.model.as_str(), ep.api_key.unwrap().expose_secret()), ("http://127.0.0.1:2/v1", "vis", "kv"));
    let aux = AuxTask { key_env: String::new(), ..aux };
    assert_eq!(vision_endpoint(&aux, &c, false, &env).unwrap().unwrap().api_key.unwrap().expose_secret(), "ko");
    // The variables stand in for the keys (Hermes' cli.py bridge).
    let env2 = Env::from_pairs([("AUXILIARY_VISION_BASE_URL", "http://127.0.0.1:3/v1"), ("AUXILIARY_VISION_MODEL", "v2")]);
    let ep = vision_endpoint(&AuxTask::default(), &chain(&env2), false, &env2).unwrap().unwrap();
    assert_eq!((ep.base_url.as_str(), ep.model.as_str()), ("http://127.0.0.1:3/v1", "v2"));
    assert!(ep.api_key.is_none());
    // A base URL without a model is an error, as is an unknown provider.
    let aux = AuxTask { base_url: "http://x/v1".into(), ..AuxTask::default() };
    assert!(vision_endpoint(&aux, &c, false, &env).unwrap_err().contains("auxiliary.vision.model"));
    let aux = AuxTask { provider: "nonesuch".into(), ..AuxTask::default() };
    assert!(vision_endpoint(&aux, &c, false, &env).unwrap_err().contains("unknown provider"));
}

#[test]
fn the_speech_backend_follows_tts_keys_with_hermes_defaults_and_limits() {
    let env = Env::from_pairs([("OPENAI_API_KEY", "ko"), ("ELEVENLABS_API_KEY", "ke")]);
    assert!(speech_choice(&TtsSettings::default(), &env).unwrap_err().contains("`edge` is not supported"));
    let t = TtsSettings { provider: "openai".into(), ..TtsSettings::default() };
    let c = speech_choice(&t, &env).unwrap();
    assert_eq!(
        (c.base_url.as_str(), c.model.as_str(), c.voice.as_str(), c.max_chars),
        ("https://api.openai.com/v1", "gpt-4o-mini-tts", "alloy", 4096)
    );
    let voice = Env::from_pairs([("OPENAI_API_KEY", "ko"), ("VOICE_TOOLS_OPENAI_KEY", "kv")]);
    assert_eq!(speech_choice(&t, &voice).unwrap().key.expose_secret(), "kv", "the voice tools' key first");
    let t = TtsSettings { provider: "ElevenLabs".into(), ..TtsSettings::default() };
    let c = speech_choice(&t, &env).unwrap();
    assert_eq!((c.voice.as_str(), c.model.as_str(), c.max_chars), ("pNInz6obpgDQGcFmaJgB", "eleven_multilingual_v2", 10_000));
    let t = TtsSettings {
        provider: "elevenlabs".into(),
        elevenlabs: TtsElevenLabs { model_id: "eleven_v3".into(), ..TtsElevenLabs::default() },
        ..t
    };
    assert_eq!(speech_choice(&t, &env).unwrap().max_chars, 5000);
    assert!(speech_choice(&t, &Env::from_pairs([("X", "y")])).unwrap_err().contains("ELEVENLABS_API_KEY"));
}
